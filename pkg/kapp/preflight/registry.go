// Package preflight is the kapp hook of the CRDUpgradeSafety check, and
// only that: it wires the check into kapp's preflight registry (registry.go),
// makes KAPP_CRD_UPGRADE_SAFETY_CONFIG the settings of every deploy
// (env.go), builds the cluster client from kapp's clients (kube.go), and
// adapts kapp's change graph to a request to the evaluation service
// (crd_upgrade_safety.go), whose warnings it prints and whose error it
// returns as the deploy's error. What is checked and how lives in pkg/kapp/evaluation
// and the engine, pkg/kapp/crdupgradesafety.
package preflight

import (
	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"carvel.dev/kapp/pkg/kapp/permissions"
	kpreflight "carvel.dev/kapp/pkg/kapp/preflight"
	"github.com/cppforlife/cobrautil"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/spf13/cobra"
)

// PermissionValidationName is upstream kapp's permission check, kept
// available under its upstream name.
const PermissionValidationName = "PermissionValidation"

// preflightFlag is the flag kapp's Registry.AddFlags defines.
const preflightFlag = "preflight"

// Registry is the preflight registry of our kapp: kapp's registry with
// upstream's PermissionValidation and our CRDUpgradeSafety, both disabled
// until --preflight, a kapp Config's preflightRules or, for
// CRDUpgradeSafety, the file named by $KAPP_CRD_UPGRADE_SAFETY_CONFIG
// enable them.
type Registry struct {
	*kpreflight.Registry
	safety *envDefaults
}

// NewRegistry returns the registry of our kapp. Pass its embedded kapp
// registry to kapp's commands, then call BindFlags on the command tree.
func NewRegistry(depsFactory cmdcore.DepsFactory, ui ui.UI) *Registry {
	safety := &envDefaults{CRDUpgradeSafety: NewCRDUpgradeSafety(ui, ClusterFromDeps(depsFactory), false)}
	return &Registry{
		Registry: kpreflight.NewRegistry(map[string]kpreflight.Check{
			PermissionValidationName: permissions.NewPreflight(depsFactory, false),
			config.CheckName:         safety,
		}),
		safety: safety,
	}
}

// NewRegistryWith is a registry with a given CRDUpgradeSafety check and no
// $KAPP_CRD_UPGRADE_SAFETY_CONFIG, for callers that read the check's
// configuration afterwards (the tools command, tests).
func NewRegistryWith(depsFactory cmdcore.DepsFactory, check *CRDUpgradeSafety) *kpreflight.Registry {
	return kpreflight.NewRegistry(map[string]kpreflight.Check{
		PermissionValidationName: permissions.NewPreflight(depsFactory, false),
		config.CheckName:         check,
	})
}

// Set is kapp's Registry.Set (the value of --preflight) that also notes
// that the command line chose the checks: the settings file then only
// configures CRDUpgradeSafety and no longer enables it.
func (r *Registry) Set(s string) error {
	r.safety.flagGiven = true
	return r.Registry.Set(s)
}

// BindFlags routes every --preflight flag under cmd (kapp deploy, kapp
// app-group deploy) through r. kapp's commands register the embedded kapp
// registry as the flag's value; without this, r would not see the flag.
func (r *Registry) BindFlags(cmd *cobra.Command) {
	cobrautil.VisitCommands(cmd, func(c *cobra.Command) {
		if f := c.Flags().Lookup(preflightFlag); f != nil {
			f.Value = r
		}
	})
}

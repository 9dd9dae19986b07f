// Package preflight wires our CRDUpgradeSafety check into kapp's preflight
// registry and adapts kapp's change graph to the comparison engine in
// pkg/kapp/preflight/crdupgradesafety. The engine holds all comparison
// logic; this package only collects CRD pairs, reads the cluster where the
// live checks need it, and renders and enforces the outcome.
package preflight

import (
	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"carvel.dev/kapp/pkg/kapp/permissions"
	kpreflight "carvel.dev/kapp/pkg/kapp/preflight"
	"github.com/cppforlife/go-cli-ui/ui"
)

// PermissionValidationName is upstream kapp's permission check, kept
// available under its upstream name.
const PermissionValidationName = "PermissionValidation"

// NewRegistry returns the preflight registry of our kapp: upstream's
// PermissionValidation and our CRDUpgradeSafety, both disabled until
// --preflight or a kapp Config's preflightRules enable them.
func NewRegistry(depsFactory cmdcore.DepsFactory, ui ui.UI) *kpreflight.Registry {
	return NewRegistryWith(depsFactory, NewCRDUpgradeSafety(ui, ClusterFromDeps(depsFactory), false))
}

// NewRegistryWith is NewRegistry with a given CRDUpgradeSafety check, for
// callers that read the check's configuration afterwards.
func NewRegistryWith(depsFactory cmdcore.DepsFactory, check *CRDUpgradeSafety) *kpreflight.Registry {
	return kpreflight.NewRegistry(map[string]kpreflight.Check{
		PermissionValidationName: permissions.NewPreflight(depsFactory, false),
		CheckName:                check,
	})
}

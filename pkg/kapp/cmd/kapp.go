// Package cmd builds our kapp command tree: upstream kapp's commands with
// our preflight registry, our version command, `kapp tools
// crd-upgrade-safety`, `kapp tools crd-upgrade-safety-webhook` and `kapp
// tools crd-migrate-storage`.
package cmd

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	kappcmd "carvel.dev/kapp/pkg/kapp/cmd"
	cmdapp "carvel.dev/kapp/pkg/kapp/cmd/app"
	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	kapptools "carvel.dev/kapp/pkg/kapp/cmd/tools"
	"github.com/cppforlife/cobrautil"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/cmd/tools"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/preflight"
	"github.com/spf13/cobra"
)

// NewDefaultKappCmd returns the root command, wired like upstream's
// cmd.NewDefaultKappCmd but with our preflight registry.
func NewDefaultKappCmd(confUI *ui.ConfUI) *cobra.Command {
	configFactory := cmdcore.NewConfigFactoryImpl()
	depsFactory := cmdcore.NewDepsFactoryImpl(configFactory, confUI)
	registry := preflight.NewRegistry(depsFactory, confUI)
	o := kappcmd.NewKappOptions(confUI, configFactory, depsFactory, registry.Registry)
	flagsFactory := cmdcore.NewFlagsFactory(configFactory, depsFactory)
	root := NewKappCmd(o, confUI, configFactory, depsFactory, flagsFactory)
	// --preflight must reach our registry so that it knows when the command
	// line chose the checks ($KAPP_CRD_UPGRADE_SAFETY_CONFIG then only
	// configures CRDUpgradeSafety).
	registry.BindFlags(root)
	return root
}

// NewKappCmd builds upstream's command tree from o, then replaces the
// version command and adds crd-upgrade-safety, crd-upgrade-safety-webhook
// and crd-migrate-storage under tools.
func NewKappCmd(o *kappcmd.KappOptions, confUI *ui.ConfUI, configFactory cmdcore.ConfigFactory,
	depsFactory cmdcore.DepsFactory, flagsFactory cmdcore.FlagsFactory) *cobra.Command {

	root := kappcmd.NewKappCmd(o, flagsFactory)

	versionCmd := NewVersionCmd(NewVersionOptions(confUI), flagsFactory)
	if old := subcommand(root, "version"); old != nil {
		root.RemoveCommand(old)
	}
	root.AddCommand(versionCmd)
	root.SetVersionTemplate(versionText())
	configureAdded(versionCmd, o, confUI, configFactory, depsFactory)

	toolsCmd := subcommand(root, "tools")
	if toolsCmd == nil { // not in kapp v0.66.0; guards a kapp upgrade that renames it
		toolsCmd = kapptools.NewCmd()
		root.AddCommand(toolsCmd)
	}
	safetyCmd := tools.NewCRDUpgradeSafetyCmd(tools.NewCRDUpgradeSafetyOptions(confUI, depsFactory), flagsFactory)
	toolsCmd.AddCommand(safetyCmd)
	configureAdded(safetyCmd, o, confUI, configFactory, depsFactory)
	webhookCmd := tools.NewCRDUpgradeSafetyWebhookCmd(tools.NewCRDUpgradeSafetyWebhookOptions(confUI, depsFactory), flagsFactory)
	webhookCmd.AddCommand(tools.NewCRDUpgradeSafetyWebhookRBACCmd(tools.NewCRDUpgradeSafetyWebhookRBACOptions(confUI, depsFactory), flagsFactory))
	// The server takes no arguments (a word that is no subcommand is an error).
	webhookCmd.Args = cobra.NoArgs
	toolsCmd.AddCommand(webhookCmd)
	configureAdded(webhookCmd, o, confUI, configFactory, depsFactory)
	migrateCmd := tools.NewCRDMigrateStorageCmd(tools.NewCRDMigrateStorageOptions(confUI, depsFactory), flagsFactory)
	toolsCmd.AddCommand(migrateCmd)
	configureAdded(migrateCmd, o, confUI, configFactory, depsFactory)
	// Recompute "Tools (inspect, diff, ...)" so the list names the new command.
	toolsCmd.Short, _, _ = strings.Cut(toolsCmd.Short, " (")
	cobrautil.ReconfigureCmdWithSubcmd(toolsCmd)

	sortPreflightFlagUsage(root)
	return root
}

// PrintedDocument reports whether the command that ran printed a document
// on standard output (kapp tools crd-upgrade-safety --output json, sarif,
// markdown, github), which kapp's closing "Succeeded" line would corrupt.
func PrintedDocument(ran *cobra.Command) bool {
	if ran == nil {
		return false
	}
	_, ok := ran.Annotations[tools.DocumentOutputAnnotation]
	return ok
}

// sortPreflightFlagUsage rewrites the help of --preflight (deploy, app-group
// deploy), which kapp's Registry.AddFlags builds by iterating a map, so
// that help lists the checks in a stable, sorted order.
func sortPreflightFlagUsage(root *cobra.Command) {
	names := []string{config.CheckName, preflight.PermissionValidationName}
	sort.Strings(names)
	usage := fmt.Sprintf("preflight checks to run. Available preflight checks are [%s]", strings.Join(names, ","))
	cobrautil.VisitCommands(root, func(cmd *cobra.Command) {
		if f := cmd.Flags().Lookup("preflight"); f != nil {
			f.Usage = usage
		}
	})
}

// configureAdded gives a command added after kappcmd.NewKappCmd what
// NewKappCmd gives its own commands: it applies its global wrappers with
// cobrautil.VisitCommands to the commands that exist at that time only.
// Mirrored here, in NewKappCmd's order (the last wrapper runs first):
// extra arguments are rejected; the global flags take effect (--json,
// --color, --yes, --column through UIFlags.ConfigureUI; --kube-api-qps/burst
// through KubeAPIFlags.Configure; --warnings through WarningFlags.Configure);
// flag values are resolved; leaf commands get --tty. Not mirrored, as
// their hooks are unexported: --debug (our commands log nothing) and
// --profile.
func configureAdded(cmd *cobra.Command, o *kappcmd.KappOptions, confUI *ui.ConfUI,
	configFactory cmdcore.ConfigFactory, depsFactory cmdcore.DepsFactory) {

	configureGlobal := cobrautil.WrapRunEForCmd(func(*cobra.Command, []string) error {
		o.UIFlags.ConfigureUI(confUI)
		o.KubeAPIFlags.Configure(configFactory)
		o.WarningFlags.Configure(depsFactory)
		return nil
	})
	configureTTYFlag := func(cmd *cobra.Command) {
		var forceTTY bool
		_, defaultTTY := cmd.Annotations[cmdapp.TTYByDefaultKey]
		cmd.Flags().BoolVar(&forceTTY, "tty", defaultTTY, "Force TTY-like output")
		cobrautil.WrapRunEForCmd(func(*cobra.Command, []string) error {
			confUI.EnableTTY(forceTTY)
			return nil
		})(cmd)
	}

	cobrautil.VisitCommands(cmd, cobrautil.ReconfigureLeafCmds(cobrautil.DisallowExtraArgs))
	cobrautil.VisitCommands(cmd, cobrautil.ReconfigureCmdWithSubcmd, configureGlobal,
		cobrautil.WrapRunEForCmd(cobrautil.ResolveFlagsForCmd), cobrautil.ReconfigureLeafCmds(configureTTYFlag))
}

func subcommand(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// ExitStatus returns the process exit status for the error a command
// returned: the status of an error implementing kapp's cmdapp.ExitStatus
// anywhere in its chain, 1 for other errors, 0 for nil.
func ExitStatus(err error) int {
	if err == nil {
		return 0
	}
	var withStatus cmdapp.ExitStatus
	if errors.As(err, &withStatus) {
		return withStatus.ExitStatus()
	}
	return 1
}

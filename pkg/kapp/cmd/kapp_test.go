package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	cmdapp "carvel.dev/kapp/pkg/kapp/cmd/app"
	kappversion "carvel.dev/kapp/pkg/kapp/version"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/preflight"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// execute runs the whole command tree in-process, as main does.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	confUI := ui.NewWrappingConfUI(ui.NewWriterUI(&out, &out, ui.NewNoopLogger()), ui.NewNoopLogger())
	root := NewDefaultKappCmd(confUI)
	root.SetArgs(args)
	err := root.Execute()
	confUI.Flush()
	return out.String(), err
}

const testdata = "tools/testdata/crd-upgrade-safety/"

func TestVersion(t *testing.T) {
	out, err := execute(t, "version")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	// A test binary has no module build info: kapp reports "develop" then.
	require.Equal(t, "kapp version "+kappversion.Version, lines[0], "upstream's line, unchanged")
	require.Regexp(t, `^crd-upgrade-safety version \S+$`, lines[1])

	Version = "v9.9.9"
	defer func() { Version = "" }()
	out, err = execute(t, "version", "--json")
	require.NoError(t, err, "global flags reach the replaced command")
	var resp struct{ Blocks []string }
	require.NoError(t, json.Unmarshal([]byte(out), &resp), out)
	require.Equal(t, []string{"kapp version " + kappversion.Version + "\ncrd-upgrade-safety version v9.9.9\n"}, resp.Blocks)
}

func TestCRDUpgradeSafetyIsWiredLikeKappCommands(t *testing.T) {
	// --json (a global flag configured per command by kapp's wrappers).
	out, err := execute(t, "tools", "crd-upgrade-safety", "-f", testdata+"old.yaml", "--file2", testdata+"new-unsafe.yaml", "--json")
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.Equal(t, 3, ExitStatus(err))
	var resp struct {
		Tables []struct{ Rows []map[string]string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &resp), out)
	require.Len(t, resp.Tables, 1)
	require.Equal(t, "enum", resp.Tables[0].Rows[0]["check"])

	// Extra arguments are rejected, as by every kapp leaf command.
	_, err = execute(t, "tools", "crd-upgrade-safety", "--file2", testdata+"new-safe.yaml", "extra")
	require.ErrorContains(t, err, "does not accept extra arguments 'extra'")
	require.Equal(t, 1, ExitStatus(err))

	// --column (a global flag) selects columns; an unknown one is an error, not a panic.
	out, err = execute(t, "tools", "crd-upgrade-safety", "-f", testdata+"old.yaml", "--file2", testdata+"new-unsafe.yaml", "--column", "crd,check")
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.Contains(t, out, "widgets.example.com  enum")
	require.NotContains(t, out, "Severity")
	_, err = execute(t, "tools", "crd-upgrade-safety", "-f", testdata+"old.yaml", "--file2", testdata+"new-unsafe.yaml", "--column", "bogus")
	require.ErrorContains(t, err, "printing findings: Failed to find header: bogus (columns: crd, version, field, check, severity, message, remedy)")
	require.Equal(t, 1, ExitStatus(err))

	out, err = execute(t, "tools", "crd-upgrade-safety", "-f", testdata+"old.yaml", "--file2", testdata+"new-safe.yaml")
	require.NoError(t, err)
	require.Equal(t, "2 CRDs checked: no unsafe changes\n", out, "no findings: one line, no empty table")
}

func TestToolsListsCRDUpgradeSafety(t *testing.T) {
	root := NewDefaultKappCmd(ui.NewWrappingConfUI(ui.NewNoopUI(), ui.NewNoopLogger()))
	tools := subcommand(root, "tools")
	require.NotNil(t, tools)
	require.Equal(t, "Tools (crd-migrate-storage, crd-upgrade-safety, crd-upgrade-safety-webhook, diff, inspect, list-labels)", tools.Short)
	require.NotNil(t, subcommand(tools, "crd-upgrade-safety"))
	webhook := subcommand(tools, "crd-upgrade-safety-webhook")
	require.NotNil(t, webhook)
	for _, flag := range []string{"bind-address", "secure-port", "tls-cert-file", "tls-private-key-file", "config", "kubeconfig"} {
		require.NotNilf(t, webhook.Flag(flag), "--%s", flag)
	}

	// --tty, added per leaf command by kapp's wrappers, defaults to true
	// here (human-readable output in CI logs).
	require.Equal(t, "true", subcommand(tools, "crd-upgrade-safety").Flags().Lookup("tty").DefValue)
	require.NotNil(t, subcommand(root, "version").Flags().Lookup("tty"))

	deploy := subcommand(root, "deploy")
	require.NotNil(t, deploy)
	require.Equal(t, "preflight checks to run. Available preflight checks are [CRDUpgradeSafety,PermissionValidation]",
		deploy.Flags().Lookup("preflight").Usage, "sorted, not in map order")
}

func TestExitStatus(t *testing.T) {
	require.Equal(t, 0, ExitStatus(nil))
	require.Equal(t, 1, ExitStatus(errors.New("x")))
	require.Equal(t, 3, ExitStatus(cmdapp.DeployDiffExitStatus{}))
	require.Equal(t, 2, ExitStatus(cmdapp.DeployDiffExitStatus{HasNoChanges: true}))
}

// Both deploy commands route --preflight through our registry, which must
// see the flag for $KAPP_CRD_UPGRADE_SAFETY_CONFIG (pkg/kapp/preflight/env.go).
func TestPreflightFlagsReachOurRegistry(t *testing.T) {
	root := NewDefaultKappCmd(ui.NewWrappingConfUI(ui.NewNoopUI(), ui.NewNoopLogger()))
	appGroup := subcommand(root, "app-group")
	require.NotNil(t, appGroup)
	for _, cmd := range []*cobra.Command{subcommand(root, "deploy"), subcommand(appGroup, "deploy")} {
		require.NotNil(t, cmd)
		f := cmd.Flags().Lookup("preflight")
		require.NotNilf(t, f, "%s has no --preflight", cmd.CommandPath())
		require.IsTypef(t, &preflight.Registry{}, f.Value, "%s --preflight goes to kapp's registry (same type name), not ours", cmd.CommandPath())
	}
}

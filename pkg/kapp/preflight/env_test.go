package preflight

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ctlconf "carvel.dev/kapp/pkg/kapp/config"
	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// deployRun is what a deploy does with our registry, in kapp's order: the
// command line is parsed (--preflight), then, before the preflight checks
// run, Registry.SetConfig gets the preflightRules of the deploy's kapp
// Config.
func deployRun(t *testing.T, args []string, kappConfig string) (*Registry, error) {
	t.Helper()
	r := NewRegistry(nil, ui.NewNoopUI())
	cmd := &cobra.Command{Use: "deploy", RunE: func(*cobra.Command, []string) error { return nil }}
	r.AddFlags(cmd.Flags()) // what kapp's deploy command does
	r.BindFlags(cmd)
	cmd.SetArgs(args)
	require.NoError(t, cmd.Execute())

	var rules []ctlconf.PreflightRule
	if kappConfig != "" {
		rs, err := ctlres.NewFileResource(ctlres.NewBytesSource([]byte(kappConfig))).Resources()
		require.NoError(t, err)
		_, conf, err := ctlconf.NewConfFromResources(rs)
		require.NoError(t, err)
		rules = conf.PreflightRules()
	}
	return r, r.SetConfig(rules)
}

// writeSettings writes a settings file and points the variable at it.
func writeSettings(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crd-upgrade-safety.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	t.Setenv(EnvConfigVar, path)
	return path
}

func kappConfig(rules string) string {
	return "apiVersion: kapp.k14s.io/v1alpha1\nkind: Config\npreflightRules:\n" + rules
}

func TestEnvConfigSelectsAndConfigures(t *testing.T) {
	const warnFile = "mode: warn\nexemptions:\n- crd: widgets.example.com\n  checks: [enum]\n"
	tests := []struct {
		name string
		// file is the settings file; "-" leaves the variable unset.
		file       string
		args       []string
		kappConfig string
		wantOn     bool
		wantPerm   bool        // PermissionValidation enabled
		wantMode   config.Mode // when wantOn
		wantExempt bool        // the file's exemption is in effect
	}{
		{name: "unset: kapp's behaviour, the check is off", file: "-"},
		{name: "unset: a Config entry enables it", file: "-",
			kappConfig: kappConfig("- name: CRDUpgradeSafety\n  config: {mode: warn}\n"),
			wantOn:     true, wantMode: config.ModeWarn},
		{name: "file enables and configures the check", file: warnFile,
			wantOn: true, wantMode: config.ModeWarn, wantExempt: true},
		{name: "an empty file enables the defaults", file: "# nothing set\n",
			wantOn: true, wantMode: config.ModeError},
		{name: "the deploy's own entry takes precedence", file: warnFile,
			kappConfig: kappConfig("- name: CRDUpgradeSafety\n  config: {mode: error}\n"),
			wantOn:     true, wantMode: config.ModeError},
		{name: "an own entry with config: {} asks for the built-in defaults", file: warnFile,
			kappConfig: kappConfig("- name: CRDUpgradeSafety\n  config: {}\n"),
			wantOn:     true, wantMode: config.ModeError},
		{name: "an own entry without config takes the file's settings", file: warnFile,
			kappConfig: kappConfig("- name: CRDUpgradeSafety\n"),
			wantOn:     true, wantMode: config.ModeWarn, wantExempt: true},
		{name: "entries for other checks keep the file's check on", file: warnFile,
			kappConfig: kappConfig("- name: PermissionValidation\n"),
			wantOn:     true, wantPerm: true, wantMode: config.ModeWarn, wantExempt: true},
		{name: "--preflight without the check turns it off", file: warnFile,
			args: []string{"--preflight=PermissionValidation"}, wantPerm: true},
		{name: "--preflight without the check wins over an entry", file: warnFile,
			args:       []string{"--preflight=PermissionValidation"},
			kappConfig: kappConfig("- name: CRDUpgradeSafety\n  config: {mode: error}\n"),
			wantPerm:   true},
		{name: "--preflight with the check: the file configures it", file: warnFile,
			args:   []string{"--preflight=CRDUpgradeSafety"},
			wantOn: true, wantMode: config.ModeWarn, wantExempt: true},
		{name: "--preflight with the check: the entry still takes precedence", file: warnFile,
			args:       []string{"--preflight", "PermissionValidation", "--preflight", "CRDUpgradeSafety"},
			kappConfig: kappConfig("- name: CRDUpgradeSafety\n  config: {mode: error}\n"),
			wantOn:     true, wantPerm: true, wantMode: config.ModeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.file == "-" {
				t.Setenv(EnvConfigVar, "") // also hides a value from the environment of the test run
			} else {
				writeSettings(t, tt.file)
			}
			r, err := deployRun(t, tt.args, tt.kappConfig)
			require.NoError(t, err)
			require.Equal(t, tt.wantOn, r.safety.Enabled(), "CRDUpgradeSafety enabled")
			perm := slices.Contains(strings.Split(r.String(), ","), PermissionValidationName)
			require.Equal(t, tt.wantPerm, perm, "PermissionValidation enabled (enabled checks: %q)", r.String())
			if !tt.wantOn {
				return
			}
			cfg := r.safety.Config()
			require.Equal(t, tt.wantMode, cfg.Mode)
			if tt.wantExempt {
				require.Equal(t, []config.Waiver{{CRD: "widgets.example.com", Checks: []string{"enum"}, Source: config.SourceSettings}}, cfg.Waivers)
			} else {
				require.Empty(t, cfg.Waivers)
			}
		})
	}
}

// Without BindFlags the registry cannot tell that --preflight chose the
// checks, and the file would turn on a check the command line left out.
func TestEnvConfigNeedsBoundFlags(t *testing.T) {
	writeSettings(t, "mode: warn\n")
	r := NewRegistry(nil, ui.NewNoopUI())
	cmd := &cobra.Command{Use: "deploy", RunE: func(*cobra.Command, []string) error { return nil }}
	r.AddFlags(cmd.Flags())
	cmd.SetArgs([]string{"--preflight=PermissionValidation"})
	require.NoError(t, cmd.Execute())
	require.NoError(t, r.SetConfig(nil))
	require.True(t, r.safety.Enabled(), "unbound: the flag went to kapp's registry only")
}

// The registry of an app-group deploy is shared by the deploys of all its
// apps: each SetConfig starts from the file again.
func TestEnvConfigPerDeploy(t *testing.T) {
	writeSettings(t, "mode: warn\n")
	r, err := deployRun(t, nil, kappConfig("- name: CRDUpgradeSafety\n  config: {mode: error}\n"))
	require.NoError(t, err)
	require.Equal(t, config.ModeError, r.safety.Config().Mode)
	require.NoError(t, r.SetConfig(nil))
	require.True(t, r.safety.Enabled())
	require.Equal(t, config.ModeWarn, r.safety.Config().Mode)
}

func TestEnvConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string // "" with noFile: the variable names a missing file
		noFile  bool
		want    string // the error after "invalid KAPP_CRD_UPGRADE_SAFETY_CONFIG: file PATH: "
		invalid bool   // also config.ErrInvalidConfig
	}{
		{name: "missing file", noFile: true, want: "open PATH: no such file or directory"},
		{name: "unknown value", content: "mode: sometimes\n", invalid: true,
			want: `mode: unknown value "sometimes" (allowed: error, warn)`},
		{name: "unknown key deep down", content: "checks:\n  sameVersion:\n    patern: {enabled: false}\n", invalid: true,
			want: "checks.sameVersion.patern: unknown key (allowed: "},
		{name: "every problem", content: "mode: sometimes\nfailmode: open\n", invalid: true,
			want: "failmode: unknown key (allowed: acceptDataLoss, alphaVersionEnforcement, annotationWaivers, checks, exemptions, failMode, liveChecksTimeout, maxFindingsPerCRD, mode, unaffectedEnforcement, waivers, webhook)\nmode: unknown value"},
		{name: "not YAML", content: "mode: [warn\n", want: "not YAML: "},
		{name: "a list", content: "- mode: warn\n", want: "must be a YAML map of the check's settings (mode, failMode, checks, ...), got a list"},
		{name: "a scalar", content: "warn\n", want: "must be a YAML map of the check's settings (mode, failMode, checks, ...), got a string"},
		{name: "a whole kapp Config", content: kappConfig("- name: CRDUpgradeSafety\n  config: {mode: warn}\n"),
			want: "holds a Kubernetes object (it has a kind), not the check's settings: write only the `config` of the CRDUpgradeSafety preflightRules entry"},
		{name: "two documents", content: "mode: warn\n---\nfailMode: open\n",
			want: "holds more than one YAML document; it holds one map, the settings of the check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.yaml")
			if tt.noFile {
				t.Setenv(EnvConfigVar, path)
			} else {
				path = writeSettings(t, tt.content)
			}
			_, err := deployRun(t, nil, "")
			require.Error(t, err)
			require.ErrorIs(t, err, ErrEnvConfig)
			if tt.invalid {
				require.ErrorIs(t, err, config.ErrInvalidConfig)
			}
			prefix := `setting preflight config "CRDUpgradeSafety": invalid KAPP_CRD_UPGRADE_SAFETY_CONFIG: file ` + path + ": "
			require.Contains(t, err.Error(), prefix+strings.ReplaceAll(tt.want, "PATH", path))
		})
	}
}

// A broken file fails deploys whatever they choose: an entry of their own
// or --preflight without the check do not hide it.
func TestEnvConfigErrorsAlways(t *testing.T) {
	writeSettings(t, "mode: sometimes\n")
	_, err := deployRun(t, []string{"--preflight=PermissionValidation"},
		kappConfig("- name: CRDUpgradeSafety\n  config: {mode: warn}\n"))
	require.ErrorIs(t, err, ErrEnvConfig)
}

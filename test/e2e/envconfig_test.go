package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// settingsEnv writes a CRDUpgradeSafety settings file and returns the
// environment that names it.
func settingsEnv(t *testing.T, content string) (env []string, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "crd-upgrade-safety.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return []string{"KAPP_CRD_UPGRADE_SAFETY_CONFIG=" + path}, path
}

// TestEnvConfig: KAPP_CRD_UPGRADE_SAFETY_CONFIG enables the check for a
// deploy that asks for nothing (no flag, no Config) with the file's
// settings; a broken file fails the deploy naming the file and key; an
// explicit --preflight without the check still wins.
func TestEnvConfig(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	before := e.snapshot(t, n)
	files := []string{crdDir(t, n, "unsafe/enum-value-removed/new.yaml", n.marker())}

	envError, _ := settingsEnv(t, "mode: error\n")
	r := e.kappEnv(t, envError, "", "deploy", "-a", n.App, "-y", "-f", files[0])
	requireBlocked(t, r)
	requireFinding(t, r.out, "enum", n.CRD, "v1", "^.spec.color")
	e.requireUnchanged(t, n, before)

	envBroken, path := settingsEnv(t, "mode: sometimes\n")
	r = e.kappEnv(t, envBroken, "", "deploy", "-a", n.App, "-y", "-f", files[0])
	require.NotEqualf(t, 0, r.exitCode, "a broken settings file must fail the deploy:\n%s", r.out)
	require.Contains(t, r.out, fmt.Sprintf(`invalid KAPP_CRD_UPGRADE_SAFETY_CONFIG: file %s: mode: unknown value "sometimes" (allowed: error, warn)`, path))
	e.requireUnchanged(t, n, before)

	// The file's settings, not the defaults: its exemption lets the change
	// through.
	envExempt, _ := settingsEnv(t, fmt.Sprintf("exemptions:\n- crd: %s\n  checks: [enum]\n  reason: e2e\n", n.CRD))
	r = e.kappEnv(t, envExempt, "", "deploy", "-a", n.App, "-y", "-f", files[0])
	require.Equalf(t, 0, r.exitCode, "the exemption of the settings file was not applied:\n%s", r.out)
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), `"enum":["red","blue"]`)

	// --preflight chooses the checks: without CRDUpgradeSafety the next
	// unsafe change (a lower maximum) is applied despite the file.
	r = e.kappEnv(t, envError, "", "deploy", "-a", n.App, "-y", "-f", crdDir(t, n, "unsafe/maximum-decreased/new.yaml"),
		"--preflight=PermissionValidation")
	require.Equalf(t, 0, r.exitCode, "--preflight=PermissionValidation must turn the check off:\n%s", r.out)
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), `"maximum":5`)
}

// TestEnvConfigAppGroup: the variable protects each app of `kapp app-group
// deploy` too.
func TestEnvConfigAppGroup(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	g := newAppGroup(t, e)

	g.write(t, "a", n.render(t, "base/crd.yaml"))
	r := g.deploy(t, nil)
	require.Equalf(t, 0, r.exitCode, "first app-group deploy failed:\n%s", r.out)
	e.createCRs(t, n, "base/crs.yaml")
	before := e.snapshot(t, n)

	g.write(t, "a", n.render(t, "unsafe/enum-value-removed/new.yaml"), n.marker())
	env, _ := settingsEnv(t, "mode: error\n")
	r = g.deploy(t, env)
	requireBlocked(t, r)
	requireFinding(t, r.out, "enum", n.CRD, "v1", "^.spec.color")
	e.requireUnchanged(t, n, before)
}

package e2e

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// appGroup is the kapp app group of a test: each subdirectory of root is
// an app. It is deleted when the test ends.
type appGroup struct {
	e          *env
	name, root string
}

func newAppGroup(t *testing.T, e *env) *appGroup {
	t.Helper()
	b := make([]byte, 3)
	_, err := rand.Read(b)
	require.NoError(t, err)
	g := &appGroup{e: e, name: fmt.Sprintf("e2e-group-%x", b), root: t.TempDir()}
	t.Cleanup(func() {
		r := e.kapp(t, "", "app-group", "delete", "-g", g.name, "-y")
		if r.exitCode != 0 {
			t.Errorf("cleanup: kapp app-group delete failed:\n%s", r.out)
		}
	})
	return g
}

// write replaces the files of app with data.
func (g *appGroup) write(t *testing.T, app string, data ...[]byte) {
	t.Helper()
	d := filepath.Join(g.root, app)
	require.NoError(t, os.RemoveAll(d))
	require.NoError(t, os.MkdirAll(d, 0o755))
	for i, x := range data {
		require.NoError(t, os.WriteFile(filepath.Join(d, fmt.Sprintf("%d.yaml", i)), x, 0o644))
	}
}

// deploy runs `kapp app-group deploy` with extra environment and flags.
func (g *appGroup) deploy(t *testing.T, extraEnv []string, extra ...string) result {
	t.Helper()
	args := append([]string{"app-group", "deploy", "-g", g.name, "--directory", g.root, "-y"}, extra...)
	return g.e.kappEnv(t, extraEnv, "", args...)
}

// TestAppGroupDeploy: `kapp app-group deploy` deploys each subdirectory as an
// app, and the check runs for each: a safe upgrade of app a is applied, an
// unsafe upgrade of app b is blocked and leaves b's CRD as it was.
func TestAppGroupDeploy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	na, nb := newNames(t), newNames(t)
	g := newAppGroup(t, e)
	write := func(app string, data ...[]byte) { g.write(t, app, data...) }
	deploy := func() result { return g.deploy(t, nil, preflightFlag) }

	write("a", na.render(t, "base/crd.yaml"))
	write("b", nb.render(t, "base/crd.yaml"))
	r := deploy()
	require.Equalf(t, 0, r.exitCode, "first app-group deploy failed:\n%s", r.out)
	e.createCRs(t, nb, "base/crs.yaml")
	before := e.snapshot(t, nb)

	write("a", na.render(t, "safe/new.yaml"))
	write("b", nb.render(t, "unsafe/enum-value-removed/new.yaml"), nb.marker())
	r = deploy()
	requireBlocked(t, r)
	requireFinding(t, r.out, "enum", nb.CRD, "v1", "^.spec.color")
	e.requireUnchanged(t, nb, before)

	// Apps deploy in directory order: a's safe upgrade went in before b was blocked.
	spec, _ := e.crdVersions(t, na)
	require.Equal(t, []string{"v1", "v2"}, spec, "app a's safe upgrade was not applied")
}

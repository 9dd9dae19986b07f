package e2e

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppGroupDeploy: `kapp app-group deploy` deploys each subdirectory as an
// app, and the check runs for each: a safe upgrade of app a is applied, an
// unsafe upgrade of app b is blocked and leaves b's CRD as it was.
func TestAppGroupDeploy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	na, nb := newNames(t), newNames(t)
	b := make([]byte, 3)
	_, err := rand.Read(b)
	require.NoError(t, err)
	groupName := fmt.Sprintf("e2e-group-%x", b)
	t.Cleanup(func() {
		r := e.kapp(t, "", "app-group", "delete", "-g", groupName, "-y")
		if r.exitCode != 0 {
			t.Errorf("cleanup: kapp app-group delete failed:\n%s", r.out)
		}
	})

	root := t.TempDir()
	write := func(app string, data ...[]byte) {
		d := filepath.Join(root, app)
		require.NoError(t, os.RemoveAll(d))
		require.NoError(t, os.MkdirAll(d, 0o755))
		for i, x := range data {
			require.NoError(t, os.WriteFile(filepath.Join(d, fmt.Sprintf("%d.yaml", i)), x, 0o644))
		}
	}
	deploy := func() result {
		return e.kapp(t, "", "app-group", "deploy", "-g", groupName, "--directory", root, "-y", preflightFlag)
	}

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

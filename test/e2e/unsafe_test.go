package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// expectation is testdata/unsafe/<case>/expect.yaml: the finding the check
// must report.
type expectation struct {
	Check   string `json:"check"`
	Field   string `json:"field"`
	Version string `json:"version"`
}

// TestUnsafeChangeIsBlocked runs every case under testdata/unsafe (the CRD
// changes OLM v1 prohibits): the CRD of
// testdata/base is deployed, custom resources are created, then the case's
// new.yaml is deployed with --preflight=CRDUpgradeSafety. kapp must fail with
// the case's check ID, CRD, version and field on one line, and the cluster
// must be exactly as before.
func TestUnsafeChangeIsBlocked(t *testing.T) {
	e := setup(t)
	entries, err := os.ReadDir(filepath.Join("testdata", "unsafe"))
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, entry := range entries {
		if !entry.IsDir() {
			continue
		}
		name := entry.Name()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var exp expectation
			raw, err := os.ReadFile(filepath.Join("testdata", "unsafe", name, "expect.yaml"))
			require.NoError(t, err)
			require.NoError(t, yaml.UnmarshalStrict(raw, &exp))
			require.NotEmpty(t, exp.Check)

			n := newNames(t)
			e.cleanupApp(t, n.App)
			e.deployOK(t, n.App, []string{crdDir(t, n, "base/crd.yaml")}, "--preflight=CRDUpgradeSafety")
			e.createCRs(t, n, "base/crs.yaml")
			before := e.snapshot(t, n)
			require.Len(t, before.CRs, 2)

			newDir := crdDir(t, n, filepath.Join("unsafe", name, "new.yaml"), n.marker())
			r := e.deploy(t, n.App, []string{newDir}, "--preflight=CRDUpgradeSafety")
			requireBlocked(t, r)
			requireFinding(t, r.out, exp.Check, n.CRD, exp.Version, exp.Field)
			e.requireUnchanged(t, n, before)
		})
	}
}

// TestNoPreflightAppliesUnsafeChange is the control of the test above: without
// the check kapp applies the same unsafe change, so it is our check that
// blocks it.
func TestNoPreflightAppliesUnsafeChange(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	before := e.crdSchemaJSON(t, n, "v1")

	r := e.deployOK(t, n.App, []string{crdDir(t, n, "unsafe/field-removed/new.yaml")})
	require.NotContains(t, r.out, "CRDUpgradeSafety")
	after := e.crdSchemaJSON(t, n, "v1")
	require.NotEqual(t, before, after)
	require.NotContains(t, after, "pollInterval", "the field removal was not applied")
}

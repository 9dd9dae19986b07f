package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExistingResourcesInDeploy: the existingResources live check looks at
// the data on the cluster. Removing an enum value that a custom resource
// uses is blocked even where the enum check allows removals, unless the live
// check is off too.
func TestExistingResourcesInDeploy(t *testing.T) {
	runConfigCases(t, []configCase{{
		name: "enum-removal-allowed-but-used", newCRD: "live/blue-removed.yaml", config: "enum-removal-none.yaml",
		blocked: true, finding: "existingResources", detail: "second", noFinding: "enum",
		contains: []string{blockedError},
	}, {
		name: "live-check-off", newCRD: "live/blue-removed.yaml", config: "enum-removal-none-no-live.yaml",
		applied: `"enum":["red","green"]`, noFinding: "existingResources",
	}})
}

// TestCRDDeletionWithResourcesIsBlocked: a deploy that would delete a CRD
// (it is no longer among the app's files) while custom resources of it exist
// is blocked (crdDeletion), and the CRD and its resources stay.
func TestCRDDeletionWithResourcesIsBlocked(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)
	keep := []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: keep-` + n.Singular + `
  namespace: default
`)
	e.deployOK(t, n.App, []string{crdDir(t, n, "base/crd.yaml", keep)}, preflightFlag)
	e.createCRs(t, n, "base/crs.yaml")
	before := e.snapshot(t, n)

	r := e.deploy(t, n.App, []string{dir(t, map[string][]byte{"keep.yaml": keep, "marker.yaml": n.marker()})}, preflightFlag)
	requireBlocked(t, r)
	requireFinding(t, r.out, "crdDeletion", n.CRD)
	e.requireUnchanged(t, n, before)
	require.NotNil(t, e.getCRD(t, n))
}

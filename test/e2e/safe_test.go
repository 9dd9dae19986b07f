package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFirstDeployAndSafeUpgradePass deploys a new CRD with the check on (a
// create has nothing to compare with), then an upgrade made only of safe
// changes (testdata/safe/new.yaml): both pass and the upgrade is applied.
func TestFirstDeployAndSafeUpgradePass(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)

	e.deployOK(t, n.App, []string{crdDir(t, n, "base/crd.yaml")}, "--preflight=CRDUpgradeSafety")
	require.NotNil(t, e.getCRD(t, n), "the first deploy did not create the CRD")
	e.createCRs(t, n, "base/crs.yaml")
	before := e.snapshot(t, n)

	r := e.deployOK(t, n.App, []string{crdDir(t, n, "safe/new.yaml")}, "--preflight=CRDUpgradeSafety")
	require.NotContains(t, r.out, blockedError)

	spec, _ := e.crdVersions(t, n)
	require.Equal(t, []string{"v1", "v2"}, spec, "the new version v2 was not applied")
	v1 := e.crdSchemaJSON(t, n, "v1")
	for _, want := range []string{`"priority"`, `"yellow"`, `"maximum":20`, `"maxLength":40`, `"maxItems":10`} {
		require.Containsf(t, v1, want, "the safe change %s was not applied", want)
	}
	after := e.snapshot(t, n)
	require.Equal(t, before.CRs, after.CRs, "custom resources changed")
}

// TestMapTypeChangeWarns: x-kubernetes-map-type: atomic added to a map (as
// controller-gen upgrades do) changes only server-side apply ownership: the
// deploy goes on with a mapType warning and the change is applied.
func TestMapTypeChangeWarns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)

	e.deployOK(t, n.App, []string{crdDir(t, n, "base/crd.yaml")}, "--preflight=CRDUpgradeSafety")
	e.createCRs(t, n, "base/crs.yaml")
	before := e.snapshot(t, n)

	r := e.deployOK(t, n.App, []string{crdDir(t, n, "safe/map-type-atomic.yaml")}, "--preflight=CRDUpgradeSafety")
	require.NotContains(t, r.out, blockedError)
	requireFinding(t, r.out, "mapType", n.CRD, "^.spec.labels")
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), `"x-kubernetes-map-type":"atomic"`, "the change was not applied")
	require.Equal(t, before.CRs, e.snapshot(t, n).CRs, "custom resources changed")
}

// TestStoredVersionOnlyInStatusCannotBeDropped switches the storage version
// from v1 to v2 (v1 no longer served), which leaves v1 only in the live
// CRD's status.storedVersions, then drops v1 from the CRD: the check must
// block it from the live status alone.
func TestStoredVersionOnlyInStatusCannotBeDropped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)
	flag := "--preflight=CRDUpgradeSafety"

	e.deployOK(t, n.App, []string{crdDir(t, n, "storedversion/1-v1.yaml")}, flag)
	e.createCRs(t, n, "storedversion/crs.yaml")

	e.deployOK(t, n.App, []string{crdDir(t, n, "storedversion/2-v1-unserved-v2-stored.yaml")}, flag)
	spec, stored := e.crdVersions(t, n)
	require.Equal(t, []string{"v1", "v2"}, spec)
	require.Equal(t, []string{"v1", "v2"}, stored, "precondition: v1 must still be a stored version")
	v1 := e.getCRD(t, n).Object["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	require.Equal(t, "v1", v1["name"])
	require.Equal(t, false, v1["served"], "precondition: v1 is not served")
	require.Equal(t, false, v1["storage"], "precondition: v1 is not the storage version")
	before := e.snapshot(t, n)

	r := e.deploy(t, n.App, []string{crdDir(t, n, "storedversion/3-v2-only.yaml", n.marker())}, flag)
	requireBlocked(t, r)
	requireFinding(t, r.out, "storedVersionRemoval", n.CRD, "v1")
	e.requireUnchanged(t, n, before)
	_, stored = e.crdVersions(t, n)
	require.Equal(t, []string{"v1", "v2"}, stored)
}

// TestWarnModeAppliesWithWarnings deploys an unsafe change (an enum value
// removed) with mode warn: the finding is printed and the change applied.
func TestWarnModeAppliesWithWarnings(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)

	r := e.deployOK(t, n.App, []string{
		crdDir(t, n, "unsafe/enum-value-removed/new.yaml"),
		crdDir(t, n, "configs/warn.yaml"),
	})
	requireFinding(t, r.out, "enum", n.CRD, "v1", "^.spec.color")
	require.Contains(t, strings.ToLower(r.out), "warn", "findings are not marked as warnings")
	require.NotContains(t, r.out, blockedError)
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), `"enum":["red","blue"]`, "the change was not applied")
}

// TestAPIServerWarningIsShown: a CRD update the apiserver accepts with a
// warning (a list set of objects, 1.37) deploys, and the warning the dry
// run returned is shown as an apiserverRejects warning.
func TestAPIServerWarningIsShown(t *testing.T) {
	t.Parallel()
	e := setup(t)
	requireKubeVersion(t, e, 37, "the apiserver warns on list sets of objects since 1.37")
	n := newNames(t)
	e.cleanupApp(t, n.App)

	e.deployOK(t, n.App, []string{crdDir(t, n, "base/crd.yaml")}, "--preflight=CRDUpgradeSafety")
	r := e.deployOK(t, n.App, []string{crdDir(t, n, "safe/list-set-of-objects.yaml")}, "--preflight=CRDUpgradeSafety")
	require.NotContains(t, r.out, blockedError)
	line, ok := findingLine(r.out, "apiserverRejects", n.CRD)
	require.True(t, ok, "no apiserverRejects warning in:\n%s", r.out)
	require.Contains(t, line, `the apiserver warns on the update (server-side dry run): x-kubernetes-list-type: set for items of type "object" is not supported`)
	require.Contains(t, line, "Warning: CRDUpgradeSafety:")
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), `"ports"`, "the update was not applied")
}

package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The safe path for removing a CRD version (docs/migrate.md, OLM's CRD
// upgrade lifecycle) with `kapp tools crd-migrate-storage`. Releases of the
// CRD are in testdata/migrate: 1 v1alpha1 only; 2 v1 added as the storage
// version; 3 v1alpha1 no longer served; 4 v1alpha1 removed.

// migrateApp deploys releases 1 and 2 of the CRD with the check on, with
// custom resources created at v1alpha1 in between: they stay stored as
// v1alpha1, and status.storedVersions is [v1alpha1 v1].
func migrateApp(t *testing.T, crs func(e *env, n names)) (*env, names) {
	t.Helper()
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/1-v1alpha1.yaml")}, preflightFlag)
	crs(e, n)
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/2-v1-storage.yaml")}, preflightFlag)
	require.Equal(t, []string{"v1alpha1", "v1"}, e.storedVersions(t, n), "precondition: objects may be stored as v1alpha1")
	return e, n
}

// TestMigrateStorageMakesVersionRemovalSafe walks the whole path: the
// removal of v1alpha1 is blocked while it is a stored version, the finding
// names the command, the command rewrites every object and trims
// status.storedVersions, and then the removal deploys and every object is
// still there and readable.
func TestMigrateStorageMakesVersionRemovalSafe(t *testing.T) {
	t.Parallel()
	e, n := migrateApp(t, func(e *env, n names) { e.createCRs(t, n, "migrate/crs.yaml") })

	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/3-v1alpha1-unserved.yaml")}, preflightFlag)
	before := e.snapshot(t, n) // read at v1, the first served version now

	r := e.deploy(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml", n.marker())}, preflightFlag)
	requireBlocked(t, r)
	requireFinding(t, r.out, "storedVersionRemoval", n.CRD, "v1alpha1",
		"kapp tools crd-migrate-storage --crd "+n.CRD+" --to v1")
	e.requireUnchanged(t, n, before)

	r = e.migrate(t, "--crd", n.CRD, "--to", "v1", "--method=rewrite", "-y")
	require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
	require.Contains(t, r.out, "4/4 objects done (4 rewritten, 0 already at v1; managedFields of 4 moved to v1)")
	require.Contains(t, r.out, "crd "+n.CRD+": status.storedVersions [v1alpha1 v1] -> [v1]")
	require.Contains(t, r.out, "migration complete [1/1 CRDs done]")
	require.Equal(t, []string{"v1"}, e.storedVersions(t, n))
	migrated := e.snapshot(t, n)
	require.Len(t, migrated.CRs, 4)
	requireRewritten(t, before, migrated)

	r = e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml")}, preflightFlag)
	requireNoFinding(t, r.out, "storedVersionRemoval", n.CRD)
	spec, stored := e.crdVersions(t, n)
	require.Equal(t, []string{"v1"}, spec, "v1alpha1 was not removed")
	require.Equal(t, []string{"v1"}, stored)
	after := e.snapshot(t, n) // a LIST fails if any object is still stored as v1alpha1
	require.Equal(t, migrated.CRs, after.CRs, "every custom resource is still there, unchanged")
	for _, name := range []string{"red", "green", "blue"} {
		_, err := e.dyn.Resource(n.gvr("v1")).Namespace("default").Get(tctx(t), name, metav1.GetOptions{})
		require.NoErrorf(t, err, "custom resource %s is not readable", name)
	}
}

// TestRemovedStoredVersionWithoutMigrationMakesObjectsUnreadable is the
// control of the test above: trimming status.storedVersions by hand without
// rewriting the objects lets the apiserver accept the removal, and then the
// objects still stored as v1alpha1 cannot be read at all. Re-adding the
// version makes them readable again (and lets the cleanup delete them).
func TestRemovedStoredVersionWithoutMigrationMakesObjectsUnreadable(t *testing.T) {
	t.Parallel()
	e, n := migrateApp(t, func(e *env, n names) { e.createCRs(t, n, "migrate/crs.yaml") })

	crd := e.getCRD(t, n)
	require.NoError(t, unstructured.SetNestedStringSlice(crd.Object, []string{"v1"}, "status", "storedVersions"))
	_, err := e.dyn.Resource(crdGVR).UpdateStatus(tctx(t), crd, metav1.UpdateOptions{})
	require.NoError(t, err)
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml")}) // without the check

	_, err = e.dyn.Resource(n.gvr("v1")).Namespace("default").List(tctx(t), metav1.ListOptions{})
	require.ErrorContains(t, err, "request to convert CR from an invalid group/version: "+group+"/v1alpha1")

	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/2-v1-storage.yaml")})
	require.Len(t, e.objectVersions(t, n, "v1"), 4)
}

// TestMigrateStorageInterruptedRunIsFinishedBySecondRun kills a migration
// half way (SIGKILL, one object at a time so that the kill lands while
// objects remain): status.storedVersions is untouched and only part of the
// objects were rewritten. A second run writes exactly the rest and trims
// status.storedVersions.
func TestMigrateStorageInterruptedRunIsFinishedBySecondRun(t *testing.T) {
	t.Parallel()
	const count = 500
	e, n := migrateApp(t, func(e *env, n names) { e.createMany(t, n, "v1alpha1", "default", count) })
	before := e.objectVersions(t, n, "v1")
	require.Len(t, before, count)

	progress := regexp.MustCompile(`: (\d+)/(\d+) objects done`)
	killed := e.runAndKill(t, func(line string) bool {
		m := progress.FindStringSubmatch(line)
		if m == nil {
			return false
		}
		done, _ := strconv.Atoi(m[1])
		return done >= count/4 && done < count
	}, "tools", "crd-migrate-storage", "--crd", n.CRD, "--method=rewrite", "--concurrency", "1", "-y")
	require.NotContains(t, killed.out, "status.storedVersions [v1alpha1 v1] -> [v1]")

	// The one update in flight at the kill may still land on the apiserver:
	// count once two reads a second apart agree.
	rewritten := -1
	for deadline := time.Now().Add(30 * time.Second); ; {
		now := changedVersions(t, before, e.objectVersions(t, n, "v1"))
		if now == rewritten || time.Now().After(deadline) {
			break
		}
		rewritten = now
		time.Sleep(time.Second)
	}
	require.Equal(t, []string{"v1alpha1", "v1"}, e.storedVersions(t, n), "an interrupted run must not trim status.storedVersions")
	t.Logf("the interrupted run rewrote %d of %d objects", rewritten, count)
	require.GreaterOrEqual(t, rewritten, count/4, "the run was killed before the progress line said so")
	require.Less(t, rewritten, count, "the run was not interrupted half way")

	r := e.migrate(t, "--crd", n.CRD, "--method=rewrite", "-y")
	require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
	require.Contains(t, r.out, fmt.Sprintf("%d/%d objects done (%d rewritten, %d already at v1; managedFields of %d moved to v1)",
		count, count, count-rewritten, rewritten, count-rewritten),
		"the second run writes exactly the objects the first did not reach")
	require.Equal(t, []string{"v1"}, e.storedVersions(t, n))
	require.Equal(t, count, changedVersions(t, before, e.objectVersions(t, n, "v1")))

	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/3-v1alpha1-unserved.yaml")}, preflightFlag)
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml")}, preflightFlag)
	require.Len(t, e.objectVersions(t, n, "v1"), count, "every object is readable without v1alpha1")
}

// TestMigrateStorageDryRunAndRefusalsChangeNothing: --dry-run tells what
// would happen; a storage version other than --to, an unknown CRD among
// the inputs and a storage version that is not served are errors (exit
// status 1) before anything is written.
func TestMigrateStorageDryRunAndRefusalsChangeNothing(t *testing.T) {
	t.Parallel()
	e, n := migrateApp(t, func(e *env, n names) { e.createCRs(t, n, "migrate/crs.yaml") })
	before := e.objectVersions(t, n, "v1")
	unchanged := func(t *testing.T) {
		t.Helper()
		require.Equal(t, []string{"v1alpha1", "v1"}, e.storedVersions(t, n), "status.storedVersions changed")
		require.Equal(t, before, e.objectVersions(t, n, "v1"), "custom resources were written")
	}

	t.Run("dry-run", func(t *testing.T) {
		r := e.migrate(t, "--crd", n.CRD, "--method=rewrite", "--dry-run")
		require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
		require.Regexp(t, regexp.QuoteMeta(n.CRD)+`\s+v1\s+\[v1alpha1 v1\] -> \[v1\]\s+4`, r.out)
		require.Contains(t, r.out, "Would rewrite the 4 objects of crd "+n.CRD+" at v1")
		require.Contains(t, r.out, "Dry run: nothing changed")
		require.NotContains(t, r.out, "objects done")
		unchanged(t)
	})

	t.Run("--to is not the storage version", func(t *testing.T) {
		r := e.migrate(t, "--crd", n.CRD, "--to", "v1alpha1", "-y")
		require.Equalf(t, 1, r.exitCode, "output:\n%s", r.out)
		require.Contains(t, r.out, "kapp: Error: nothing changed: crd "+n.CRD+
			": cannot migrate stored versions: the storage version is v1, not v1alpha1 (--to)")
		unchanged(t)
	})

	t.Run("unknown CRD among the inputs", func(t *testing.T) {
		r := e.migrate(t, "--crd", n.CRD, "--crd", "nopes."+group, "-y")
		require.Equalf(t, 1, r.exitCode, "output:\n%s", r.out)
		require.Contains(t, r.out, "crd nopes."+group+": cannot migrate stored versions: no such CustomResourceDefinition on the cluster")
		unchanged(t)
	})

	t.Run("storage version not served", func(t *testing.T) {
		e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/v1-stored-unserved.yaml")})
		before = e.objectVersions(t, n, "v1alpha1")
		r := e.migrate(t, "--crd", n.CRD, "-y")
		require.Equalf(t, 1, r.exitCode, "output:\n%s", r.out)
		require.Contains(t, r.out, "crd "+n.CRD+": cannot migrate stored versions: storage version v1 has served: false")
		require.Equal(t, []string{"v1alpha1", "v1"}, e.storedVersions(t, n))
		require.Equal(t, before, e.objectVersions(t, n, "v1alpha1"), "custom resources were written")
	})
}

// TestMigrateStorageAutoMethod: without --method, the command uses the
// cluster's storage version migrator where the cluster serves
// storagemigration.k8s.io/v1, except on 1.37.0 to 1.37.2, whose migrator
// trims status.storedVersions after a failed migration
// (migrate_failed_test.go) (1.37.3 and later: kube-controller-manager rewrites the
// objects and trims status.storedVersions itself; the command deletes the
// StorageVersionMigration it created), and rewrites the objects itself on
// older clusters. Either way the removal of the old version then deploys.
func TestMigrateStorageAutoMethod(t *testing.T) {
	t.Parallel()
	e, n := migrateApp(t, func(e *env, n names) { e.createCRs(t, n, "migrate/crs.yaml") })
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/3-v1alpha1-unserved.yaml")}, preflightFlag)
	before := e.snapshot(t, n)

	r := e.migrate(t, "--crd", n.CRD, "-y")
	require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
	trims, gitVersion := migratorTrimsOnFailure(t, e)
	switch {
	case kubeMinor(t, e) >= 37 && trims:
		require.Contains(t, r.out, "Method: rewrite (the cluster serves storagemigration.k8s.io/v1, but the storage version migrator of Kubernetes "+
			gitVersion+" trims status.storedVersions after a failed migration")
		require.Contains(t, r.out, "4/4 objects done (4 rewritten, 0 already at v1; managedFields of 4 moved to v1)")
	case kubeMinor(t, e) >= 37:
		require.Contains(t, r.out, "Method: migrator (the cluster serves storagemigration.k8s.io/v1")
		require.Regexp(t, `StorageVersionMigration `+regexp.QuoteMeta(n.CRD)+`-\S+ succeeded`, r.out)
		require.Contains(t, r.out, "migration complete [1/1 CRDs done]: by the cluster's storage version migrator")
		svms, err := e.dyn.Resource(svmGVR).List(tctx(t), metav1.ListOptions{})
		require.NoError(t, err)
		for _, s := range svms.Items {
			require.NotContainsf(t, s.GetName(), n.CRD, "StorageVersionMigration %s was left behind", s.GetName())
		}
	default:
		require.Contains(t, r.out, "Method: rewrite (the cluster does not serve storagemigration.k8s.io/v1")
		require.Contains(t, r.out, "4/4 objects done (4 rewritten, 0 already at v1; managedFields of 4 moved to v1)")
	}
	require.Equal(t, []string{"v1"}, e.storedVersions(t, n))
	requireRewritten(t, before, e.snapshot(t, n))

	r = e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml")}, preflightFlag)
	requireNoFinding(t, r.out, "storedVersionRemoval", n.CRD)
	spec, stored := e.crdVersions(t, n)
	require.Equal(t, []string{"v1"}, spec)
	require.Equal(t, []string{"v1"}, stored)
}

var svmGVR = schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"}

// requireRewritten requires every custom resource of before to be in after,
// written again (a new resourceVersion) with the same spec.
func requireRewritten(t *testing.T, before, after snapshot) {
	t.Helper()
	rvSpec := regexp.MustCompile(`^(\S+) (.*)$`) // snapshot: "resourceVersion spec"
	for k, v := range before.CRs {
		old, now := rvSpec.FindStringSubmatch(v), rvSpec.FindStringSubmatch(after.CRs[k])
		require.NotNilf(t, now, "custom resource %s is gone", k)
		require.NotEqualf(t, old[1], now[1], "%s was not rewritten", k)
		require.Equalf(t, old[2], now[2], "the spec of %s changed", k)
	}
}

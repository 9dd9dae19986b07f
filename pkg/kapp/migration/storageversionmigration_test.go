package migration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCRDMigrateStorageMigrator: where the cluster serves
// storagemigration.k8s.io/v1, auto picks the cluster's migrator and says
// so; the command creates one StorageVersionMigration, follows it, checks
// the trim the migrator made, deletes the migration and writes nothing
// itself.
func TestCRDMigrateStorageMigrator(t *testing.T) {
	f := newFakeMigrationCluster(switched())
	f.addObjects("a", 5, "v1alpha1")
	f.servesSVM, f.svmPolls = true, 3

	rec, err := runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}})
	out := rec.out.String()
	require.NoError(t, err)
	require.Equal(t, "Method: migrator (the cluster serves storagemigration.k8s.io/v1: its storage version migrator rewrites the objects)", rec.methodLine())
	require.Equal(t, []string{"widgets.example.com-0"}, f.svmsMade)
	require.Equal(t, f.svmsMade, f.svmsGone, "the migration it created is deleted")
	require.Contains(t, out, "crd widgets.example.com: StorageVersionMigration widgets.example.com-0 created")
	require.Contains(t, out, "crd widgets.example.com: StorageVersionMigration widgets.example.com-0 running: migrating")
	require.Contains(t, out, "crd widgets.example.com: StorageVersionMigration widgets.example.com-0 succeeded")
	require.Contains(t, out, "migration complete [1/1 CRDs done]: by the cluster's storage version migrator")
	require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))
	require.Zero(t, f.writes, "the migrator rewrote the objects, not the command")
	require.Empty(t, f.statusUpdates, "the migrator trimmed status.storedVersions, not the command")
}

func TestCRDMigrateStorageMethod(t *testing.T) {
	cases := []struct {
		name      string
		method    string
		serves    bool
		want, err string
	}{
		{name: "auto without the migrator API: rewrite", method: MethodAuto,
			want: "Method: rewrite (the cluster does not serve storagemigration.k8s.io/v1: this command rewrites the objects)"},
		{name: "rewrite where the migrator is served", method: MethodRewrite, serves: true,
			want: "Method: rewrite (--method rewrite: this command rewrites the objects)"},
		{name: "migrator where it is not served", method: MethodMigrator,
			err: "--method migrator: the cluster does not serve storagemigration.k8s.io/v1 StorageVersionMigrations (Kubernetes 1.37 and later do); use --method rewrite"},
		{name: "unknown", method: "magic", err: `expected --method to be one of auto, migrator, rewrite, got "magic"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeMigrationCluster(switched())
			f.addObjects("a", 2, "v1alpha1")
			f.servesSVM = tc.serves
			rec, err := runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}, method: tc.method})
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				require.Zero(t, f.writes)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, rec.methodLine())
			require.Empty(t, f.svmsMade)
			require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))
		})
	}
}

// TestCRDMigrateStorageMigratorFails: a failed migration is deleted and
// created again (migratorAttempts in all); when the last fails too, the
// error names it and its message, status.storedVersions stays as it was
// and every migration is deleted all the same. A migration that succeeds
// without trimming status.storedVersions is an error too.
func TestCRDMigrateStorageMigratorFails(t *testing.T) {
	f := newFakeMigrationCluster(switched())
	f.addObjects("a", 2, "v1alpha1")
	f.servesSVM, f.svmFail = true, "failed to migrate a/obj-001: forbidden"
	out, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
	require.ErrorIs(t, err, ErrMigrationFailed)
	require.EqualError(t, err, "crd widgets.example.com: storage version migration failed: StorageVersionMigration widgets.example.com-2: "+
		"StorageVersionMigrationFailed: failed to migrate a/obj-001: forbidden; status.storedVersions left as it was")
	require.Equal(t, []string{"widgets.example.com-0", "widgets.example.com-1", "widgets.example.com-2"}, f.svmsMade)
	require.Equal(t, f.svmsMade, f.svmsGone)
	require.Contains(t, out, "StorageVersionMigration widgets.example.com-0 failed (StorageVersionMigrationFailed: failed to migrate a/obj-001: forbidden); creating another")
	require.Contains(t, out, "migration incomplete [0/1 CRDs done, 1 failed]")
	require.Equal(t, []string{"v1alpha1", "v1"}, liveStoredVersions(t, f, "widgets.example.com"))

	f = newFakeMigrationCluster(switched())
	f.servesSVM, f.svmNoTrim = true, true
	_, err = runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
	require.ErrorContains(t, err, "crd widgets.example.com: StorageVersionMigration widgets.example.com-0 succeeded, but status.storedVersions is still [v1alpha1 v1]")
	require.Equal(t, f.svmsMade, f.svmsGone)
}

// TestCRDMigrateStorageWhileMigrating: while the cluster's migrator works
// on a CRD (condition StorageMigrating True), nothing is written: the plan
// refuses it, naming the migration, and a trim that finds it running
// refuses too.
func TestCRDMigrateStorageWhileMigrating(t *testing.T) {
	migrating := func(u *unstructured.Unstructured) {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		conds = append(conds, map[string]any{"type": "StorageMigrating", "status": "True", "reason": "MigrationRunning",
			"message": "Migration widgets.example.com-x7k2p is running"})
		_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
	}
	crd := switched()
	migrating(crd)
	f := newFakeMigrationCluster(crd)
	f.addObjects("a", 2, "v1alpha1")
	_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}, method: MethodRewrite})
	require.ErrorIs(t, err, errMigrationRunning)
	require.ErrorContains(t, err, "Migration widgets.example.com-x7k2p is running; wait for it to finish")
	require.Zero(t, f.writes)

	f = newFakeMigrationCluster(switched())
	f.addObjects("a", 2, "v1alpha1")
	f.afterList = func() { migrating(f.crds["widgets.example.com"]) } // the migrator starts during the rewrite
	_, err = runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}, method: MethodRewrite})
	require.ErrorIs(t, err, errMigrationRunning)
	require.Empty(t, f.statusUpdates, "status.storedVersions is never written while a migration runs")
	require.Equal(t, []string{"v1alpha1", "v1"}, liveStoredVersions(t, f, "widgets.example.com"))
}

// TestCRDMigrateStorageWaitsForObservedGeneration: after a storage version
// change, nothing is migrated until the CRD's status.observedGeneration
// (Kubernetes 1.36 and later) reaches its generation.
func TestCRDMigrateStorageWaitsForObservedGeneration(t *testing.T) {
	crd := switched()
	crd.SetGeneration(3)
	_ = unstructured.SetNestedField(crd.Object, int64(2), "status", "observedGeneration")
	f := newFakeMigrationCluster(crd)
	f.addObjects("a", 2, "v1alpha1")
	_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}, method: MethodRewrite})
	require.ErrorContains(t, err, "crd widgets.example.com: status.observedGeneration is 2, its generation 3, after 100ms: the apiserver has not taken up the current spec")
	require.Zero(t, f.writes)

	_ = unstructured.SetNestedField(f.crds["widgets.example.com"].Object, int64(3), "status", "observedGeneration")
	_, err = runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}, method: MethodRewrite})
	require.NoError(t, err)
	require.Equal(t, 2, f.writes)
}

// TestCRDMigrateStorageMigratorRecreatesFailed: the 1.37.2 migrator fails
// a migration when its discovery cache predates the CRD's last change; the
// command does not wait on a failed migration: it deletes it, waits for
// the resync and creates another, deleting both.
func TestCRDMigrateStorageMigratorRecreatesFailed(t *testing.T) {
	f := newFakeMigrationCluster(switched())
	f.addObjects("a", 2, "v1alpha1")
	f.servesSVM, f.svmFailN = true, 1
	f.svmFail = `resource "example.com/v1alpha1, Resource=widgets" does not support discovery operations: [update patch list]`
	out, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
	require.NoError(t, err)
	require.Contains(t, out, "StorageVersionMigration widgets.example.com-0 failed (StorageVersionMigrationFailed: resource")
	require.Contains(t, out, "creating another in 1ms, after the migrator's discovery resync (attempt 2 of 3)")
	require.Equal(t, []string{"widgets.example.com-0", "widgets.example.com-1"}, f.svmsMade)
	require.Equal(t, f.svmsMade, f.svmsGone)
	require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))
}

// TestMigrationFailedError: a failed migration is a *MigrationFailedError
// (errors.As) that unwraps to ErrMigrationFailed.
func TestMigrationFailedError(t *testing.T) {
	failed := &MigrationFailedError{CRD: "widgets.example.com", Migration: "m", Reason: "StorageVersionMigrationFailed",
		Message: `resource "example.com/v1alpha1, Resource=widgets" does not exist in discovery`}
	require.ErrorIs(t, fmt.Errorf("wrapped: %w", failed), ErrMigrationFailed)
	var as *MigrationFailedError
	require.ErrorAs(t, fmt.Errorf("wrapped: %w", failed), &as)
	require.Equal(t, "m", as.Migration)
}

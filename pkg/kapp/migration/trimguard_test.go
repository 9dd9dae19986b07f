package migration

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	versioninfo "k8s.io/apimachinery/pkg/version"
)

// TestMigratorTrimOf: the versions whose storage version migrator trims
// status.storedVersions after a failed migration (kubernetes#143103).
func TestMigratorTrimOf(t *testing.T) {
	cases := []struct {
		gitVersion string
		trims      bool
		unparsed   bool
	}{
		{gitVersion: "v1.36.0"},
		{gitVersion: "v1.36.3"},
		{gitVersion: "v1.37.0", trims: true},
		{gitVersion: "v1.37.1", trims: true},
		{gitVersion: "v1.37.2", trims: true},
		{gitVersion: "v1.37.2-eks-1a2b3c4", trims: true},
		{gitVersion: "v1.37.2+k3s1", trims: true},
		{gitVersion: "v1.37.0-rc.1", trims: true},
		{gitVersion: "v1.37.3"},
		{gitVersion: "v1.37.3-gke.1200"},
		{gitVersion: "v1.38.0"},
		{gitVersion: "v1.39.1"},
		{gitVersion: "", trims: true, unparsed: true},
		{gitVersion: "v1", trims: true, unparsed: true},
		{gitVersion: "devel", trims: true, unparsed: true},
	}
	for _, tc := range cases {
		t.Run(tc.gitVersion, func(t *testing.T) {
			got := migratorTrimOf(&versioninfo.Info{GitVersion: tc.gitVersion})
			require.Equal(t, tc.trims, got.TrimsOnFailure)
			require.Equal(t, tc.unparsed, got.Unparsed)
		})
	}
	require.True(t, migratorTrimOf(nil).TrimsOnFailure)
}

// TestResolveMethodTrimGuard: on 1.37.0 to 1.37.2 the command never
// creates a StorageVersionMigration: auto rewrites the objects itself (an
// object that cannot be written leaves status.storedVersions as it was),
// and --method migrator is refused before anything is written. On the
// other versions that serve the migrator, auto uses it.
func TestResolveMethodTrimGuard(t *testing.T) {
	denied := apierrors.NewForbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "obj-001",
		errors.New(`ValidatingAdmissionPolicy 'freeze' denied request`))
	cases := []struct {
		version    string
		method     string
		wantMethod string // "": refused
		wantLine   string
	}{
		{version: "v1.37.0", method: MethodAuto, wantMethod: MethodRewrite,
			wantLine: "Method: rewrite (the cluster serves storagemigration.k8s.io/v1, but the storage version migrator of Kubernetes v1.37.0 trims status.storedVersions after a failed migration, leaving objects in a version no longer listed (kubernetes/kubernetes#143103, Kubernetes 1.37.0 to 1.37.2): this command rewrites the objects)"},
		{version: "v1.37.2", method: MethodAuto, wantMethod: MethodRewrite,
			wantLine: "Method: rewrite (the cluster serves storagemigration.k8s.io/v1, but the storage version migrator of Kubernetes v1.37.2 trims"},
		{version: "v1.37.2", method: MethodMigrator,
			wantLine: "--method migrator: storage version migrator refused: the storage version migrator of Kubernetes v1.37.2 trims status.storedVersions after a failed migration, leaving objects in a version no longer listed (kubernetes/kubernetes#143103, Kubernetes 1.37.0 to 1.37.2); use --method rewrite (--method auto picks it on this version)"},
		{version: "weird", method: MethodAuto, wantMethod: MethodRewrite,
			wantLine: `Method: rewrite (the cluster serves storagemigration.k8s.io/v1, but the apiserver's version "weird" cannot be read`},
		{version: "v1.37.3", method: MethodAuto, wantMethod: MethodMigrator, wantLine: "Method: migrator"},
		{version: "v1.38.0", method: MethodAuto, wantMethod: MethodMigrator, wantLine: "Method: migrator"},
		{version: "v1.38.0", method: MethodMigrator, wantMethod: MethodMigrator, wantLine: "Method: migrator"},
	}
	for _, tc := range cases {
		t.Run(tc.version+"/"+tc.method, func(t *testing.T) {
			f := newFakeMigrationCluster(switched())
			f.servesSVM, f.version = true, tc.version
			f.addObjects("a", 3, "v1alpha1")
			// An object nobody can write any more (an admission policy):
			// the migrator would fail on it, and trim on 1.37.0-1.37.2.
			f.failUpdates["a/obj-001"] = denied
			rec, err := runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}, method: tc.method})
			switch tc.wantMethod {
			case "":
				require.ErrorIs(t, err, ErrMigratorTrimsOnFailure)
				require.EqualError(t, err, tc.wantLine)
				require.Zero(t, f.writes, "nothing written")
				require.Empty(t, f.svmsMade)
				require.Equal(t, []string{"v1alpha1", "v1"}, liveStoredVersions(t, f, "widgets.example.com"))
			case MethodRewrite:
				require.Contains(t, rec.methodLine(), tc.wantLine)
				require.ErrorIs(t, err, ErrObjectsFailed)
				require.Empty(t, f.svmsMade, "no StorageVersionMigration created")
				require.Equal(t, []string{"v1alpha1", "v1"}, liveStoredVersions(t, f, "widgets.example.com"),
					"status.storedVersions still names v1alpha1, where obj-001 is stored")
				require.Equal(t, map[string]int{"v1": 2, "v1alpha1": 1}, f.storedAt())
			case MethodMigrator:
				require.Contains(t, rec.methodLine(), tc.wantLine)
				require.NotEmpty(t, f.svmsMade, "the migrator is used (the fake's migrator rewrites every object)")
				require.NoError(t, err)
			}
		})
	}

	t.Run("the version cannot be read", func(t *testing.T) {
		f := newFakeMigrationCluster(switched())
		f.servesSVM, f.versionErr = true, errors.New("boom")
		_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
		require.EqualError(t, err, "reading the apiserver's version: boom")
		require.Empty(t, f.svmsMade)
	})
}

// TestMigratorTrimAfterFailureUndone: the second guard. A cluster that
// reports a version whose migrator is used (here 1.37.3) but trims
// status.storedVersions after a failed migration all the same: the
// command lists the versions again after each failed migration, says so,
// and fails.
func TestMigratorTrimAfterFailureUndone(t *testing.T) {
	f := newFakeMigrationCluster(switched())
	f.servesSVM, f.svmFail, f.svmTrimOnFail = true, `"red" is forbidden: denied`, true
	f.addObjects("a", 2, "v1alpha1")
	rec, err := runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}})
	out := rec.out.String()
	require.ErrorIs(t, err, ErrMigrationFailed)
	require.Contains(t, rec.methodLine(), "Method: migrator")
	require.Contains(t, out, "crd widgets.example.com: the cluster's migrator trimmed status.storedVersions to [v1] although StorageVersionMigration widgets.example.com-0 failed (kubernetes/kubernetes#143103): restored to [v1alpha1 v1]")
	require.Len(t, f.svmsMade, migratorAttempts)
	require.Equal(t, []string{"v1alpha1", "v1"}, liveStoredVersions(t, f, "widgets.example.com"))
	require.Equal(t, []string{"widgets.example.com", "widgets.example.com", "widgets.example.com"}, f.statusUpdates, "one restore per failed migration")
}

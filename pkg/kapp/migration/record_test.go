package migration

import (
	"errors"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// record is the migrate command's record on the live CRD.
func record(t *testing.T, f *fakeMigrationCluster, name string) (storedversions.Record, bool) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	return storedversions.RecordOf(f.crds[name].GetAnnotations())
}

// TestCRDMigrateStorageRecords: both methods leave the record the webhook
// and the check accept as evidence for the trim: the rewrite writes it
// after every object was proven rewritten and before the trim, the
// migrator path once the cluster's migrator succeeded and trimmed.
func TestCRDMigrateStorageRecords(t *testing.T) {
	t.Run("rewrite", func(t *testing.T) {
		f := newFakeMigrationCluster(switched())
		f.addObjects("a", 5, "v1alpha1")
		_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
		require.NoError(t, err)
		rec, ok := record(t, f, "widgets.example.com")
		require.True(t, ok)
		require.Equal(t, storedversions.Record{Version: "v1", Generation: 3}, rec)
		require.Equal(t, []string{"widgets.example.com"}, f.crdUpdates)
		require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))
	})

	t.Run("rewrite: objects that fail leave no record", func(t *testing.T) {
		f := newFakeMigrationCluster(switched())
		f.addObjects("a", 5, "v1alpha1")
		f.failUpdates["a/obj-002"] = errors.New("refused by a webhook")
		_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
		require.Error(t, err)
		_, ok := record(t, f, "widgets.example.com")
		require.False(t, ok)
		require.Empty(t, f.crdUpdates)
	})

	t.Run("migrator", func(t *testing.T) {
		f := newFakeMigrationCluster(switched())
		f.addObjects("a", 5, "v1alpha1")
		f.servesSVM, f.svmPolls = true, 2
		_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
		require.NoError(t, err)
		rec, ok := record(t, f, "widgets.example.com")
		require.True(t, ok)
		require.Equal(t, storedversions.Record{Version: "v1", Generation: 3}, rec)
	})

	t.Run("a trim by hand is migrated again", func(t *testing.T) {
		crd := fakeCRD([]string{"v1"}, fakeVersion{"v1alpha1", true, false}, fakeVersion{"v1", true, true})
		u := crd.Object["metadata"].(map[string]any)
		u["managedFields"] = []any{map[string]any{
			"manager": "kubectl-patch", "operation": "Update", "apiVersion": "apiextensions.k8s.io/v1",
			"subresource": "status", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:status": map[string]any{"f:storedVersions": map[string]any{}}},
		}}
		f := newFakeMigrationCluster(crd)
		f.addObjects("a", 4, "v1alpha1")
		shown, err := runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}})
		out := shown.out.String()
		require.NoError(t, err)
		require.Contains(t, shown.rows[0], "[v1] (trimmed by kubectl-patch without evidence: objects migrated again)", "the plan table")
		require.Equal(t, map[string]int{"v1": 4}, f.storedAt())
		rec, ok := record(t, f, "widgets.example.com")
		require.True(t, ok)
		require.Equal(t, "v1", rec.Version)
		require.Contains(t, out, "restored to [v1alpha1 v1] until every object is migrated")
		require.Len(t, f.statusUpdates, 2, "restored, then trimmed on the proof")
		require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))
	})
}

// TestPlanEvidence: the plan counts status.storedVersions [v1] as done by
// the same rule as the check (storedversions.UnprovenTrim): a trim by
// hand is proven only by a record of the CRD's current generation (3) and
// storage version (v1).
func TestPlanEvidence(t *testing.T) {
	handTrimmed := func(annotations map[string]string) *unstructured.Unstructured {
		crd := fakeCRD([]string{"v1"}, fakeVersion{"v1alpha1", false, false}, fakeVersion{"v1", true, true})
		crd.SetAnnotations(annotations)
		crd.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{
			"manager": "kubectl-patch", "operation": "Update", "apiVersion": "apiextensions.k8s.io/v1",
			"subresource": "status", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:status": map[string]any{"f:storedVersions": map[string]any{}}},
		}}
		return crd
	}
	for _, tc := range []struct {
		name     string
		crd      *unstructured.Unstructured
		wantDone bool
	}{
		{"trimmed by hand, no record", handTrimmed(nil), false},
		{"trimmed by hand, a record of the current generation", handTrimmed(storedversions.Record{Version: "v1", Generation: 3}.Annotations()), true},
		{"trimmed by hand, a record of an earlier generation", handTrimmed(storedversions.Record{Version: "v1", Generation: 2}.Annotations()), false},
		{"trimmed by hand, a record of another storage version", handTrimmed(storedversions.Record{Version: "v1alpha1", Generation: 3}.Annotations()), false},
		{"trimmed by hand, an old-format record", handTrimmed(map[string]string{storedversions.RecordVersionAnnotation: "v1"}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planMigration(tc.crd, "v1")
			require.NoError(t, err)
			require.Equal(t, tc.wantDone, p.Done())
			if !tc.wantDone {
				require.Equal(t, "[v1] (trimmed by kubectl-patch without evidence: objects migrated again)", p.StoredVersionsChange())
			}
		})
	}
}

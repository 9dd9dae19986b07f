package migration

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestMoveManagedFields(t *testing.T) {
	const apply, update = metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	at := func(e metav1.ManagedFieldsEntry, sec int64) metav1.ManagedFieldsEntry {
		e.Time = &metav1.Time{Time: time.Unix(sec, 0).UTC()}
		return e
	}
	status := func(e metav1.ManagedFieldsEntry) metav1.ManagedFieldsEntry { e.Subresource = "status"; return e }
	cases := []struct {
		name    string
		in      []metav1.ManagedFieldsEntry
		want    []metav1.ManagedFieldsEntry
		changed bool
	}{
		{name: "none"},
		{name: "all at the storage version: unchanged",
			in:   []metav1.ManagedFieldsEntry{mfEntry("flux", apply, "v1", `{"f:spec":{}}`)},
			want: []metav1.ManagedFieldsEntry{mfEntry("flux", apply, "v1", `{"f:spec":{}}`)}},
		{name: "an applier at an old version keeps its fields, at the storage version", changed: true,
			in: []metav1.ManagedFieldsEntry{
				mfEntry("flux", apply, "v1alpha1", `{"f:spec":{"f:color":{}}}`),
				mfEntry("ctl", update, "v1", `{"f:spec":{"f:size":{}}}`)},
			want: []metav1.ManagedFieldsEntry{
				mfEntry("flux", apply, "v1", `{"f:spec":{"f:color":{}}}`),
				mfEntry("ctl", update, "v1", `{"f:spec":{"f:size":{}}}`)}},
		{name: "one updater at two versions becomes one entry: the union of its fields, the later time", changed: true,
			in: []metav1.ManagedFieldsEntry{
				at(mfEntry("ctl", update, "v1alpha1", `{"f:spec":{"f:color":{},"f:tags":{"v:\"a\"":{}}}}`), 20),
				mfEntry("flux", apply, "v1", `{"f:spec":{"f:size":{}}}`),
				at(mfEntry("ctl", update, "v1", `{"f:spec":{"f:tags":{"v:\"b\"":{}}},"f:metadata":{"f:labels":{"f:x":{}}}}`), 30)},
			want: []metav1.ManagedFieldsEntry{
				at(mfEntry("ctl", update, "v1", `{"f:metadata":{"f:labels":{"f:x":{}}},"f:spec":{"f:color":{},"f:tags":{"v:\"a\"":{},"v:\"b\"":{}}}}`), 30),
				mfEntry("flux", apply, "v1", `{"f:spec":{"f:size":{}}}`)}},
		{name: "the status subresource and other managers stay apart", changed: true,
			in: []metav1.ManagedFieldsEntry{
				status(mfEntry("ctl", update, "v1alpha1", `{"f:status":{}}`)),
				mfEntry("ctl", update, "v1alpha1", `{"f:spec":{}}`),
				mfEntry("kubectl", update, "v1beta1", `{"f:metadata":{}}`)},
			want: []metav1.ManagedFieldsEntry{
				status(mfEntry("ctl", update, "v1", `{"f:status":{}}`)),
				mfEntry("ctl", update, "v1", `{"f:spec":{}}`),
				mfEntry("kubectl", update, "v1", `{"f:metadata":{}}`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, res, err := moveManagedFields(tc.in, "example.com/v1", FieldSetPolicy{})
			require.NoError(t, err)
			require.Equal(t, tc.changed, res.Changed)
			require.Empty(t, res.Dropped)
			require.Len(t, got, len(tc.want))
			for i := range tc.want {
				require.JSONEq(t, tc.want[i].FieldsV1.GetRawString(), got[i].FieldsV1.GetRawString(), "entry %d", i)
				got[i].FieldsV1, tc.want[i].FieldsV1 = nil, nil
				require.Equal(t, tc.want[i], got[i], "entry %d", i)
			}
		})
	}

	t.Run("undecodable fields", func(t *testing.T) {
		_, _, err := moveManagedFields([]metav1.ManagedFieldsEntry{
			mfEntry("ctl", update, "v1alpha1", `{"f:spec":{}}`), mfEntry("ctl", update, "v1", `not json`)}, "example.com/v1", FieldSetPolicy{})
		require.ErrorContains(t, err, `merging the managedFields entries of manager "ctl" (Update): decoding fieldsV1`)
	})
}

// TestCRDMigrateStorageMovesManagedFields: with either method, every
// managedFields entry at another version ends up at the storage version
// (server-side apply converts the object to each, and fails once one is
// removed), before status.storedVersions is trimmed.
func TestCRDMigrateStorageMovesManagedFields(t *testing.T) {
	const apply, update = metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	cases := []struct {
		name       string
		method     string
		serves     bool
		wantWrites int
		want       []string
	}{
		{name: "rewrite", method: MethodRewrite, wantWrites: 3,
			want: []string{"4/4 objects done (3 rewritten, 1 already at v1; managedFields of 2 moved to v1)",
				"migration complete [1/1 CRDs done]: 3 rewritten, 1 already at the storage version; managedFields of 2 moved to the storage version"}},
		{name: "migrator", method: MethodMigrator, serves: true, wantWrites: 2,
			want: []string{"4/4 objects checked for managedFields at other versions (managedFields of 2 moved to v1, 2 at v1 already)",
				"StorageVersionMigration widgets.example.com-0 succeeded",
				"migration complete [1/1 CRDs done]: by the cluster's storage version migrator; managedFields of 2 moved to the storage version"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeMigrationCluster(switched())
			f.addObjects("a", 3, "v1alpha1")
			f.addObjects("b", 1, "v1")
			f.servesSVM = tc.serves
			f.setManagers("a/obj-000", mfEntry("flux", apply, "v1alpha1", `{"f:spec":{"f:color":{}}}`))
			f.setManagers("a/obj-001", mfEntry("flux", apply, "v1alpha1", `{"f:spec":{}}`), mfEntry("ctl", update, "v1", `{"f:status":{}}`))
			f.setManagers("b/obj-000", mfEntry("flux", apply, "v1", `{"f:spec":{}}`))

			out, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}, method: tc.method})
			require.NoError(t, err)
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
			require.Equal(t, tc.wantWrites, f.writes)
			require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))
			for _, key := range []string{"a/obj-000", "a/obj-001", "b/obj-000"} {
				for _, e := range f.managers(key) {
					require.Equalf(t, "example.com/v1", e.APIVersion, "%s: %s", key, e.Manager)
				}
			}
			require.JSONEq(t, `{"f:spec":{"f:color":{}}}`, f.managers("a/obj-000")[0].FieldsV1.GetRawString(), "fields and ownership kept")
			require.Equal(t, "flux", f.managers("a/obj-000")[0].Manager)

			rec, err := runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}, method: tc.method})
			require.NoError(t, err)
			require.Zero(t, rec.preview.Pending(), "Nothing to migrate")
			require.Equal(t, tc.wantWrites, f.writes, "a second run writes nothing")
		})
	}
}

// TestCRDMigrateStorageManagedFieldsAfterTrim: status.storedVersions is
// the storage version alone, but an object's managedFields name another
// version (a writer at a version still served, after the migration): the
// command moves them, and writes only that object.
func TestCRDMigrateStorageManagedFieldsAfterTrim(t *testing.T) {
	f := newFakeMigrationCluster(fakeCRD([]string{"v1"}, v1alpha1Old, v1Stored))
	f.addObjects("a", 5, "v1")
	f.setManagers("a/obj-003", mfEntry("flux", metav1.ManagedFieldsOperationApply, "v1alpha1", `{"f:spec":{}}`))

	rec, err := runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}, dryRun: true})
	require.NoError(t, err)
	require.Equal(t, []string{"widgets.example.com v1 [v1] (unchanged) 5 stale=1"}, rec.rows,
		"the managedFields of 1 object to move (the command's words: TestMigratePlanTable, TestMigratePreviewLines)")
	p := rec.plans[0]
	require.True(t, p.Done() && p.Pending(), "status.storedVersions is [v1] already; managedFields to move")
	require.Empty(t, p.DroppedVersions(), "moved, not dropped")
	require.True(t, rec.preview.DryRun)
	require.Zero(t, f.writes)

	out, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}, method: MethodRewrite})
	require.NoError(t, err)
	require.Contains(t, out, "---- crd widgets.example.com: moving the managedFields of 1 object to v1 [0/1 CRDs done] ----")
	require.Contains(t, out, "5/5 objects checked for managedFields at other versions (managedFields of 1 moved to v1, 4 at v1 already)")
	require.Equal(t, 1, f.writes)
	require.Equal(t, "example.com/v1", f.managers("a/obj-003")[0].APIVersion)
	require.Empty(t, f.statusUpdates)
}

// TestCRDMigrateStorageObjectFailures: objects that cannot be written are
// named with their causes and do not stop the others, nor the other CRDs;
// the run fails; with the migrator, no migration is created while an
// object's managedFields could not be moved (it would trim
// status.storedVersions).
func TestCRDMigrateStorageObjectFailures(t *testing.T) {
	denied := apierrors.NewForbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "obj-001",
		errors.New("admission webhook \"deny.example.com\" denied the request"))
	cases := []struct {
		name      string
		method    string
		serves    bool
		wantErr   string
		wantSVMs  int
		wantWrite int
	}{
		{name: "rewrite", method: MethodRewrite, wantWrite: 3,
			wantErr: "crd widgets.example.com: 1 of 3 objects could not be rewritten at v1; status.storedVersions left as [v1alpha1 v1] (fix them and run the command again): " +
				"rewriting a/obj-001: widgets.example.com \"obj-001\" is forbidden: admission webhook \"deny.example.com\" denied the request"},
		{name: "migrator", method: MethodMigrator, serves: true, wantWrite: 3,
			wantErr: "crd widgets.example.com: the managedFields of 1 of 3 objects could not be moved to v1; no StorageVersionMigration created, status.storedVersions left as [v1alpha1 v1] (fix them and run the command again): " +
				"moving the managedFields of a/obj-001: widgets.example.com \"obj-001\" is forbidden: admission webhook \"deny.example.com\" denied the request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// gadgets, the second CRD, has no objects of its own in the
			// fake (they are shared): it fails nowhere and is migrated.
			f := newFakeMigrationCluster(switched(), renamed(switched(), "gadgets"))
			f.addObjects("a", 3, "v1alpha1")
			f.servesSVM = tc.serves
			for _, key := range []string{"a/obj-000", "a/obj-001", "a/obj-002"} {
				f.setManagers(key, mfEntry("flux", metav1.ManagedFieldsOperationApply, "v1alpha1", `{"f:spec":{}}`))
			}
			f.failUpdates["a/obj-001"], f.failResource = denied, "widgets"
			out, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com", "gadgets.example.com"}, method: tc.method})
			requirePlainError(t, err)
			require.ErrorIs(t, err, ErrObjectsFailed)
			require.True(t, apierrors.IsForbidden(err), "the cause is kept")
			var failed *ObjectsFailedError
			require.ErrorAs(t, err, &failed)
			require.Equal(t, "widgets.example.com", failed.CRD)
			require.Contains(t, err.Error(), tc.wantErr)
			require.Equal(t, []string{"v1alpha1", "v1"}, liveStoredVersions(t, f, "widgets.example.com"))
			require.Contains(t, out, "3/3 objects", "every object was tried")
			require.Equal(t, tc.wantWrite, f.writes, "the other objects were written (and gadgets wrote the one they share)")
			require.Contains(t, out, "crd widgets.example.com: not migrated (the error is at the end); going on with the other CRDs")
			require.Contains(t, out, "---- crd gadgets.example.com:", "the next CRD is migrated all the same")
			require.Contains(t, out, "migration incomplete [1/2 CRDs done, 1 failed]")
			require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "gadgets.example.com"))
			if tc.serves {
				require.Equal(t, []string{"gadgets.example.com-0"}, f.svmsMade, "no migration for widgets")
			}

			// A rerun after the fix resumes: only what was left is written.
			delete(f.failUpdates, "a/obj-001")
			_, err = runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}, method: tc.method})
			require.NoError(t, err)
			require.Equal(t, tc.wantWrite, f.writes, "nothing left to write")
			require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))
		})
	}
}

// TestRewriteObjectManagedFieldsConflict: a concurrent writer between the
// LIST and the write is never overwritten: the conflict re-reads the
// object and moves the managedFields of what it read.
func TestRewriteObjectManagedFieldsConflict(t *testing.T) {
	f := newFakeMigrationCluster()
	f.addObjects("ns", 1, "v1alpha1")
	f.setManagers("ns/obj-000", mfEntry("flux", metav1.ManagedFieldsOperationApply, "v1alpha1", `{"f:spec":{}}`))
	objs := f.Objects(widgetsGR.WithVersion("v1"))
	list, err := objs.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	f.conflicts["ns/obj-000"] = 1
	f.setManagers("ns/obj-000", mfEntry("flux", metav1.ManagedFieldsOperationApply, "v1alpha1", `{"f:spec":{}}`),
		mfEntry("other", metav1.ManagedFieldsOperationUpdate, "v1alpha1", `{"f:metadata":{}}`))
	got, err := rewriteObject(t.Context(), objs, &list.Items[0], "example.com/v1", FieldSetPolicy{}, passManagedFields)
	require.NoError(t, err)
	require.Equal(t, objectResult{outcome: outcomeRewritten, managed: true}, got)
	require.Equal(t, 1, f.gets)
	mf := f.managers("ns/obj-000")
	require.Len(t, mf, 2, "the concurrent writer's entry is kept")
	require.Equal(t, "other", mf[1].Manager)
	require.Equal(t, "example.com/v1", mf[1].APIVersion)
}

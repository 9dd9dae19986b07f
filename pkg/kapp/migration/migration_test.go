package migration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	v1alpha1Old    = fakeVersion{"v1alpha1", true, false}
	v1alpha1Stored = fakeVersion{"v1alpha1", true, true}
	v1Stored       = fakeVersion{"v1", true, true}
	v1Served       = fakeVersion{"v1", true, false}
)

// switched is a CRD whose storage moved from v1alpha1 to v1: objects may
// still be stored at v1alpha1.
func switched() *unstructured.Unstructured {
	return fakeCRD([]string{"v1alpha1", "v1"}, v1alpha1Old, v1Stored)
}

type migrateRun struct {
	names       []string
	to          string
	method      string // MethodAuto when empty
	concurrency int    // DefaultMigrationConcurrency when 0
	dryRun      bool
	pageSize    int64
}

// runMigrate runs a migration against cluster as the command does, and
// returns its progress output and error.
func runMigrate(t *testing.T, cluster *fakeMigrationCluster, r migrateRun) (string, error) {
	t.Helper()
	rec, err := runMigrateRecorded(t, cluster, r)
	return rec.out.String(), err
}

// runMigrateRecorded runs a migration against cluster as the command does
// (confirmed, as with --yes), and returns what it showed its UI.
func runMigrateRecorded(t *testing.T, cluster *fakeMigrationCluster, r migrateRun) (*recordUI, error) {
	t.Helper()
	rec := &recordUI{}
	confUI := ui.NewWrappingConfUI(ui.NewWriterUI(&rec.out, &rec.out, ui.NewNoopLogger()), ui.NewNoopLogger())
	rec.plainMessages = plainMessages{confUI}
	req := Request{Names: r.names, To: r.to, Method: r.method, Concurrency: r.concurrency, DryRun: r.dryRun,
		Cluster: cluster, UI: rec}
	if r.method == "" {
		req.Method = MethodAuto
	}
	if r.concurrency == 0 {
		req.Concurrency = DefaultMigrationConcurrency
	}
	req.tune = func(m *Migrator) {
		m.storageWait, m.pollInterval, m.migratorRetryWait = 100*time.Millisecond, time.Millisecond, time.Millisecond
		m.progressEvery = time.Hour // count-driven lines only: deterministic
		if r.pageSize > 0 {
			m.pageSize = r.pageSize
		}
	}
	err := Run(context.Background(), req)
	confUI.Flush()
	t.Logf("output:\n%s", rec.out.String())
	return rec, err
}

// recordUI records the facts a migration shows its UI (the command words
// and prints them: pkg/kapp/cmd/tools, crd_migrate_storage_output.go),
// and prints its progress as plainMessages does.
type recordUI struct {
	plainMessages
	out     bytes.Buffer
	plans   []*Plan
	rows    []string // the plans as Planned saw them (planRow): the migration changes them as it goes
	preview *Preview
	outcome *Outcome
}

func (r *recordUI) Planned(plans []*Plan) error {
	r.plans = plans
	for _, p := range plans {
		r.rows = append(r.rows, planRow(p))
	}
	return nil
}

func (r *recordUI) Preview(p Preview) error  { r.preview = &p; return nil } // confirmed
func (r *recordUI) Finished(o Outcome) error { r.outcome = &o; return nil }

// planRow is a plan as the command's table shows it, in facts: name,
// storage version, status.storedVersions change, objects (or "-": nothing
// to do), and the objects whose managedFields are moved.
func planRow(p *Plan) string {
	objects := strconv.Itoa(p.Objects)
	if !p.Pending() {
		objects = "-"
	}
	return fmt.Sprintf("%s %s %s %s stale=%d", p.Name, p.Storage, p.StoredVersionsChange(), objects, p.StaleManagedFields)
}

// methodLine is the method and why, in the form of the command's line
// (the command's own words: TestMigratePreviewLines in pkg/kapp/cmd/tools);
// "" when the migration stopped before it resolved the method.
func (r *recordUI) methodLine() string {
	if r.preview == nil {
		return ""
	}
	return "Method: " + r.preview.Method + " (" + r.preview.Why + ")"
}

// plainMessages prints as kapp's cmdcore.PlainMessagesUI does, without the
// time of day.
type plainMessages struct{ ui ui.UI }

func (m plainMessages) NotifySection(msg string, args ...any) {
	m.ui.BeginLinef("---- "+msg+" ----\n", args...)
}

func (m plainMessages) Notify(msgs []string) {
	for _, msg := range msgs {
		m.ui.BeginLinef("%s\n", msg)
	}
}

// requirePlainError checks err is an error without an exit status of its
// own (the command exits with 1).
func requirePlainError(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var status interface{ ExitStatus() int }
	require.False(t, errors.As(err, &status), "expected a plain error (exit status 1), got %T: %v", err, err)
}

func liveStoredVersions(t *testing.T, f *fakeMigrationCluster, name string) []string {
	t.Helper()
	stored, _, _ := unstructured.NestedStringSlice(f.crds[name].Object, "status", "storedVersions")
	return stored
}

var progressLine = regexp.MustCompile(`crd widgets\.example\.com: (\d+)/(\d+) objects done`)

func TestCRDMigrateStorageMigrates(t *testing.T) {
	f := newFakeMigrationCluster(switched())
	f.addObjects("a", 25, "v1alpha1")
	f.addObjects("b", 10, "v1")
	f.hashes = []string{StorageVersionHash("example.com", "v1", "Widget")}

	rec, err := runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}, concurrency: 3, pageSize: 7})
	out := rec.out.String()
	require.NoError(t, err)
	require.Equal(t, map[string]int{"v1": 35}, f.storedAt(), "every object is stored at the storage version")
	require.Equal(t, 25, f.writes, "only the objects stored at v1alpha1 were written")
	require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))
	require.Equal(t, []string{"widgets.example.com"}, f.statusUpdates)
	require.Equal(t, []string{"", "a/obj-007", "a/obj-014", "a/obj-021", "b/obj-003"}, f.lists, "paged LIST")

	require.Equal(t, []string{"widgets.example.com v1 [v1alpha1 v1] -> [v1] 35 stale=0"}, rec.rows, "the plan table")
	require.Contains(t, out, "---- crd widgets.example.com: rewriting 35 objects at v1 [0/1 CRDs done] ----")
	require.Contains(t, out, "crd widgets.example.com: 35/35 objects done (25 rewritten, 10 already at v1)")
	require.Contains(t, out, "crd widgets.example.com: status.storedVersions [v1alpha1 v1] -> [v1]")
	require.Contains(t, out, "---- migration complete [1/1 CRDs done]: 25 rewritten, 10 already at the storage version ----")
	lines := progressLine.FindAllString(out, -1)
	require.GreaterOrEqual(t, len(lines), 5, "progress while rewriting")
	require.LessOrEqual(t, len(lines), 11, "about one line per tenth of the objects, not one per object")

	t.Run("a second run has nothing to do", func(t *testing.T) {
		rec, err := runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}})
		require.NoError(t, err)
		require.Zero(t, rec.preview.Pending(), "Nothing to migrate")
		require.Equal(t, []string{"widgets.example.com v1 [v1] (unchanged) - stale=0"}, rec.rows)
		require.Equal(t, 25, f.writes)
		require.Len(t, f.statusUpdates, 1)
	})
}

func TestCRDMigrateStorageDryRun(t *testing.T) {
	f := newFakeMigrationCluster(switched(), renamed(fakeCRD([]string{"v1"}, v1Stored), "gadgets"))
	f.addObjects("a", 12, "v1alpha1")

	rec, err := runMigrateRecorded(t, f, migrateRun{names: []string{"gadgets.example.com", "widgets.example.com"}, dryRun: true})
	require.NoError(t, err)
	require.Equal(t, []string{"gadgets.example.com v1 [v1] (unchanged) - stale=0", "widgets.example.com v1 [v1alpha1 v1] -> [v1] 12 stale=0"},
		rec.rows, "nothing to do for gadgets; widgets' 12 objects rewritten (the command's words: TestMigratePreviewLines)")
	require.True(t, rec.preview.DryRun)
	require.Equal(t, MethodRewrite, rec.preview.Method, "the fake cluster serves no StorageVersionMigrations")
	require.Equal(t, 1, rec.preview.Pending())
	require.Empty(t, rec.out.String(), "no progress: nothing changed")
	require.Zero(t, f.writes)
	require.Empty(t, f.statusUpdates)
	require.Equal(t, []string{""}, f.lists, "a dry run only reads: the objects of gadgets, migrated already, for managedFields at other versions")
	require.Equal(t, []string{"v1alpha1", "v1"}, liveStoredVersions(t, f, "widgets.example.com"))
}

func TestCRDMigrateStorageCannotMigrate(t *testing.T) {
	established := func(status string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
				"type": "Established", "status": status, "message": "not yet"}}, "status", "conditions")
		}
	}
	cases := []struct {
		name     string
		crd      *unstructured.Unstructured
		edit     func(*unstructured.Unstructured)
		run      migrateRun
		sentinel error
		contains []string
	}{
		{name: "storage version is not --to", crd: fakeCRD([]string{"v1alpha1"}, v1alpha1Stored, v1Served),
			run: migrateRun{to: "v1"}, sentinel: ErrStorageVersionMismatch,
			contains: []string{"crd widgets.example.com: cannot migrate stored versions: the storage version is v1alpha1, not v1 (--to): deploy the CRD with storage: true on v1 first, then migrate"}},
		{name: "--to names no version", crd: switched(), run: migrateRun{to: "v2"}, sentinel: ErrStorageVersionMismatch,
			contains: []string{"crd widgets.example.com: cannot migrate stored versions: it has no version v2 (--to); its versions: v1alpha1, v1, storage version v1"}},
		{name: "storage version not served", crd: fakeCRD([]string{"v1alpha1", "v1"}, v1alpha1Old, fakeVersion{"v1", false, true}),
			sentinel: ErrStorageVersionNotServed,
			contains: []string{"crd widgets.example.com: cannot migrate stored versions: storage version v1 has served: false: objects are read and rewritten through the API at the storage version, so v1 must be served during the migration"}},
		{name: "not established", crd: switched(), edit: established("False"), sentinel: errCRDNotReady,
			contains: []string{"crd widgets.example.com: cannot migrate stored versions: its API is not served yet (condition Established is False: not yet)"}},
		{name: "being deleted", crd: switched(), edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "2024-01-01T00:00:00Z", "metadata", "deletionTimestamp")
		}, sentinel: errCRDNotReady, contains: []string{"crd widgets.example.com: cannot migrate stored versions: it is being deleted"}},
		{name: "no such CRD", crd: switched(), run: migrateRun{names: []string{"nopes.example.com"}}, sentinel: errCRDNotFound,
			contains: []string{"crd nopes.example.com: cannot migrate stored versions: no such CustomResourceDefinition on the cluster"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.edit != nil {
				tc.edit(tc.crd)
			}
			// gadgets can be migrated, and is not touched either: nothing
			// is written while any CRD cannot be migrated.
			f := newFakeMigrationCluster(tc.crd, renamed(switched(), "gadgets"))
			f.addObjects("a", 3, "v1alpha1")
			run := tc.run
			if run.names == nil {
				run.names = []string{"gadgets.example.com", "widgets.example.com"}
			}
			_, err := runMigrate(t, f, run)
			requirePlainError(t, err)
			require.ErrorIs(t, err, ErrCannotMigrate)
			require.ErrorIs(t, err, tc.sentinel)
			require.True(t, strings.HasPrefix(err.Error(), "nothing changed: "), err.Error())
			for _, s := range tc.contains {
				require.Contains(t, err.Error(), s)
			}
			require.Zero(t, f.writes)
			require.Empty(t, f.lists)
			require.Empty(t, f.statusUpdates)
		})
	}

	t.Run("every reason is reported at once", func(t *testing.T) {
		f := newFakeMigrationCluster(fakeCRD([]string{"v1alpha1"}, v1alpha1Stored, v1Served))
		_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com", "nopes.example.com"}, to: "v1"})
		require.ErrorIs(t, err, ErrStorageVersionMismatch)
		require.ErrorIs(t, err, errCRDNotFound)
		require.Contains(t, err.Error(), "crd widgets.example.com: cannot migrate stored versions: the storage version is v1alpha1, not v1")
		require.Contains(t, err.Error(), "crd nopes.example.com: cannot migrate stored versions: no such CustomResourceDefinition")
	})

	t.Run("--to equal to the storage version", func(t *testing.T) {
		f := newFakeMigrationCluster(switched())
		_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}, to: "v1"})
		require.NoError(t, err)
		require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))
	})
}

// TestCRDMigrateStorageResumes: objects that cannot be written leave
// status.storedVersions as it was; a second run writes only what the first
// did not, then trims it.
func TestCRDMigrateStorageResumes(t *testing.T) {
	f := newFakeMigrationCluster(switched())
	f.addObjects("a", 20, "v1alpha1")
	for _, name := range []string{"a/obj-013", "a/obj-004"} {
		f.failUpdates[name] = apierrors.NewInvalid(schema.GroupKind{Group: "example.com", Kind: "Widget"}, name, nil)
	}

	_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
	requirePlainError(t, err)
	require.ErrorContains(t, err, "crd widgets.example.com: 2 of 20 objects could not be rewritten at v1; status.storedVersions left as [v1alpha1 v1] (fix them and run the command again)")
	msg := err.Error()
	require.Less(t, strings.Index(msg, "rewriting a/obj-004:"), strings.Index(msg, "rewriting a/obj-013:"), "failures named in order")
	require.True(t, apierrors.IsInvalid(err), "the cause is kept")
	require.Equal(t, []string{"v1alpha1", "v1"}, liveStoredVersions(t, f, "widgets.example.com"))
	require.Empty(t, f.statusUpdates)
	require.Equal(t, 18, f.writes)

	f.failUpdates = map[string]error{}
	out, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
	require.NoError(t, err)
	require.Contains(t, out, "20/20 objects done (2 rewritten, 18 already at v1)")
	require.Equal(t, 20, f.writes)
	require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))
}

func TestCRDMigrateStorageCRDChangedMeanwhile(t *testing.T) {
	f := newFakeMigrationCluster(switched())
	f.addObjects("a", 3, "v1alpha1")
	f.afterList = func() { // e.g. a deploy switched the storage version back and forth
		f.mu.Lock()
		defer f.mu.Unlock()
		f.crds["widgets.example.com"].SetGeneration(4)
	}
	_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
	require.ErrorIs(t, err, ErrCRDChanged)
	require.ErrorContains(t, err, "crd widgets.example.com: crd changed during the migration: its spec changed while objects were rewritten (generation 3 -> 4")
	require.Empty(t, f.statusUpdates)
	require.Equal(t, []string{"v1alpha1", "v1"}, liveStoredVersions(t, f, "widgets.example.com"))
}

func TestCRDMigrateStorageStatusConflict(t *testing.T) {
	f := newFakeMigrationCluster(switched())
	f.statusConf = 2 // another client writes the status (e.g. conditions) twice
	_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
	require.NoError(t, err)
	require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))

	f = newFakeMigrationCluster(switched())
	f.statusConf = maxWriteAttempts
	_, err = runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
	require.True(t, apierrors.IsConflict(err), "%v", err)
	require.ErrorContains(t, err, "crd widgets.example.com: setting status.storedVersions to [v1]")
	require.Equal(t, []string{"v1alpha1", "v1"}, liveStoredVersions(t, f, "widgets.example.com"))
}

func TestCRDMigrateStorageExpiredContinueToken(t *testing.T) {
	f := newFakeMigrationCluster(switched())
	f.addObjects("a", 12, "v1alpha1")
	f.expireOnce = true
	_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}, pageSize: 5})
	require.NoError(t, err)
	require.Equal(t, []string{"", "a/obj-005", "a/obj-005", "a/obj-010"}, f.lists,
		"the LIST goes on with the token the 410 offers")
	require.Equal(t, 12, f.writes)
}

func TestCRDMigrateStorageWaitsForTheStorageVersion(t *testing.T) {
	old, cur := StorageVersionHash("example.com", "v1alpha1", "Widget"), StorageVersionHash("example.com", "v1", "Widget")

	f := newFakeMigrationCluster(switched())
	f.addObjects("a", 2, "v1alpha1")
	f.hashes = []string{old, old, old, cur}
	_, err := runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
	require.NoError(t, err)
	require.Equal(t, 2, f.writes)

	f = newFakeMigrationCluster(switched())
	f.addObjects("a", 2, "v1alpha1")
	f.hashes = []string{old}
	_, err = runMigrate(t, f, migrateRun{names: []string{"widgets.example.com"}})
	require.ErrorContains(t, err, "crd widgets.example.com: the apiserver still stores widgets at a version other than v1 after 100ms "+
		"(API discovery reports storageVersionHash \""+old+"\", v1 is \""+cur+"\"): the storage version switch has not taken effect")
	require.Zero(t, f.writes)
	require.Empty(t, f.lists)
	require.Empty(t, f.statusUpdates)
}

// TestStorageVersionHashIsTheAPIServers compares with values that
// kube-apiserver v1.35 reports in API discovery (kubectl get --raw
// /api/v1 and /apis/GROUP/VERSION on the cluster of hack/cluster.sh, the
// last for a CRD widgets.demo.example.com stored at v1). The e2e tests
// also depend on it: a wrong hash makes every migration wait and fail.
func TestStorageVersionHashIsTheAPIServers(t *testing.T) {
	for gvk, want := range map[[3]string]string{
		{"", "v1", "Pod"}:       "xPOwRZ+Yhw8=",
		{"", "v1", "ConfigMap"}: "qFsyl6wFWjQ=",
		{"apiextensions.k8s.io", "v1beta1", "CustomResourceDefinition"}: "jfWCUB31mvA=", // CRDs are still stored as v1beta1
		{"demo.example.com", "v1", "Widget"}:                            "bQ1YHmG75GQ=", // a CRD's
	} {
		require.Equal(t, want, StorageVersionHash(gvk[0], gvk[1], gvk[2]), "%v", gvk)
	}
}

func TestRewriteObject(t *testing.T) {
	cases := []struct {
		name      string
		storedAt  string
		conflicts int
		deleted   bool
		failWith  error
		want      outcome
		wantErr   string
		wantGets  int
	}{
		{name: "stored at an old version: rewritten", storedAt: "v1alpha1", want: outcomeRewritten},
		{name: "stored at the storage version: no write", storedAt: "v1", want: outcomeCurrent},
		{name: "changed meanwhile: re-read, then written", storedAt: "v1alpha1", conflicts: 1, want: outcomeCurrent, wantGets: 1},
		{name: "deleted meanwhile", storedAt: "v1alpha1", deleted: true, want: outcomeGone},
		{name: "keeps changing", storedAt: "v1alpha1", conflicts: maxWriteAttempts, wantGets: maxWriteAttempts - 1,
			wantErr: "rewriting ns/obj-000: still conflicting after 10 attempts: Operation cannot be fulfilled on widgets.example.com \"obj-000\": the object has been modified"},
		{name: "refused", storedAt: "v1alpha1", failWith: apierrors.NewForbidden(widgetsGR, "obj-000", errors.New("no RBAC")),
			wantErr: "rewriting ns/obj-000: widgets.example.com \"obj-000\" is forbidden: no RBAC"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeMigrationCluster()
			f.addObjects("ns", 1, tc.storedAt)
			f.conflicts["ns/obj-000"] = tc.conflicts
			f.deleteFirst["ns/obj-000"] = tc.deleted
			if tc.failWith != nil {
				f.failUpdates["ns/obj-000"] = tc.failWith
			}
			objs := f.Objects(widgetsGR.WithVersion("v1"))
			list, err := objs.List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			got, err := rewriteObject(context.Background(), objs, &list.Items[0], "example.com/v1", FieldSetPolicy{}, passRewrite)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				require.True(t, errors.Is(err, tc.failWith) || tc.failWith == nil)
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.want, got.outcome)
			}
			require.Equal(t, tc.wantGets, f.gets)
		})
	}
}

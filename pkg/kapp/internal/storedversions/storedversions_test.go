package storedversions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// evidenceCRD is widgets.example.com at generation 7: v1 (served), v2 (the
// storage version), v3 (unserved), status.storedVersions before.
func evidenceCRD(before []string, edits ...func(*apiextv1.CustomResourceDefinition)) *apiextv1.CustomResourceDefinition {
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", Generation: 7},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true}, {Name: "v2", Served: true, Storage: true}, {Name: "v3"},
			},
		},
		Status: apiextv1.CustomResourceDefinitionStatus{StoredVersions: before},
	}
	for _, edit := range edits {
		edit(crd)
	}
	return crd
}

func withRecord(version string, generation int64) func(*apiextv1.CustomResourceDefinition) {
	return func(crd *apiextv1.CustomResourceDefinition) {
		crd.Annotations = Record{Version: version, Generation: generation}.Annotations()
	}
}

// withOldFormatRecord: the record as first written, a version and no
// generation.
func withOldFormatRecord(version string) func(*apiextv1.CustomResourceDefinition) {
	return func(crd *apiextv1.CustomResourceDefinition) {
		crd.Annotations = map[string]string{RecordVersionAnnotation: version}
	}
}

var trimTime = metav1.NewTime(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))

// trimmedBy: manager was the last to write status.storedVersions through
// the status subresource.
func trimmedBy(manager string) func(*apiextv1.CustomResourceDefinition) {
	return func(crd *apiextv1.CustomResourceDefinition) {
		crd.ManagedFields = append(crd.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:versions":{}}}`),
		}, metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &trimTime,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:storedVersions":{}}}`),
		})
	}
}

// migrating: the StorageMigrating condition as the cluster's migrator sets
// it.
func migrating(status apiextv1.ConditionStatus, reason, message string, generation int64) func(*apiextv1.CustomResourceDefinition) {
	return func(crd *apiextv1.CustomResourceDefinition) {
		crd.Status.Conditions = append(crd.Status.Conditions, apiextv1.CustomResourceDefinitionCondition{
			Type: apiextv1.StorageMigrating, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
		})
	}
}

// running: the migrator marked the CRD migrating with migration name at
// generation.
func running(name string, generation int64) func(*apiextv1.CustomResourceDefinition) {
	return migrating(apiextv1.ConditionTrue, MigratorRunningReason, fmt.Sprintf("Migration %s is running", name), generation)
}

func TestCurrentRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*apiextv1.CustomResourceDefinition)
		want bool
	}{
		{"current: the generation and the storage version of the CRD", withRecord("v2", 7), true},
		{"stale: an earlier generation", withRecord("v2", 6), false},
		{"from the future: a later generation", withRecord("v2", 8), false},
		{"another storage version at the current generation", withRecord("v3", 7), false},
		{"an old-format record without a generation", withOldFormatRecord("v2"), false},
		{"no record", func(*apiextv1.CustomResourceDefinition) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := CurrentRecord(evidenceCRD([]string{"v2"}, tc.edit))
			if ok != tc.want {
				t.Fatalf("CurrentRecord ok = %v, want %v (record %+v)", ok, tc.want, r)
			}
			if ok && r != (Record{Version: "v2", Generation: 7}) {
				t.Errorf("record %+v", r)
			}
		})
	}
}

// TestUnprovenTrim: the rule of the engine's check and the migrate
// command's plan. A trim of status.storedVersions counts as proven only by
// a record of the CRD's current generation and storage version, or by the
// writer that trims only on proof.
func TestUnprovenTrim(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits []func(*apiextv1.CustomResourceDefinition)
		want  string // the manager of the unproven trim, "" when proven (nil)
	}{
		{name: "trimmed by hand, no record",
			edits: []func(*apiextv1.CustomResourceDefinition){trimmedBy("kubectl-patch")}, want: "kubectl-patch"},
		{name: "trimmed by hand under a current record: every object is at v2 since generation 7",
			edits: []func(*apiextv1.CustomResourceDefinition){trimmedBy("kubectl-patch"), withRecord("v2", 7)}},
		// The stale-record scenario: migrated to v2 at generation 3, v3
		// made storage and objects written at it, storage moved back to
		// v2, v3 unserved, trimmed by hand.
		{name: "trimmed by hand under a record of an earlier generation",
			edits: []func(*apiextv1.CustomResourceDefinition){trimmedBy("kubectl-patch"), withRecord("v2", 3)}, want: "kubectl-patch"},
		{name: "trimmed by hand under a record of another storage version",
			edits: []func(*apiextv1.CustomResourceDefinition){trimmedBy("kubectl-patch"), withRecord("v3", 7)}, want: "kubectl-patch"},
		{name: "trimmed by hand under an old-format record (no generation)",
			edits: []func(*apiextv1.CustomResourceDefinition){trimmedBy("kubectl-patch"), withOldFormatRecord("v2")}, want: "kubectl-patch"},
		{name: "trimmed by the migrate command, its record dropped since (a kapp deploy)",
			edits: []func(*apiextv1.CustomResourceDefinition){trimmedBy(CommandFieldManager)}},
		{name: "trimmed by the migrate command, its record of an earlier generation",
			edits: []func(*apiextv1.CustomResourceDefinition){trimmedBy(CommandFieldManager), withRecord("v2", 3)}},
		{name: "trimmed by the cluster's migrator after a migration that succeeded",
			edits: []func(*apiextv1.CustomResourceDefinition){trimmedBy(MigratorFieldManager),
				migrating(apiextv1.ConditionFalse, MigratorSucceededReason, "The migration has succeeded and the stored versions have been updated", 7)}},
		{name: "trimmed by the cluster's migrator after a migration that failed (1.37.0 to 1.37.2)",
			edits: []func(*apiextv1.CustomResourceDefinition){trimmedBy(MigratorFieldManager),
				migrating(apiextv1.ConditionFalse, MigratorFailedReason, "The migration has failed", 7)}, want: MigratorFieldManager},
		{name: "never written through the status subresource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := UnprovenTrim(evidenceCRD([]string{"v2"}, tc.edits...))
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("UnprovenTrim = %+v, want nil (proven)", got)
			case tc.want != "" && got == nil:
				t.Fatalf("UnprovenTrim = nil, want a trim by %s", tc.want)
			case tc.want != "" && (got.Manager != tc.want || got.Time == nil || !got.Time.Equal(&trimTime)):
				t.Fatalf("UnprovenTrim = %+v, want a trim by %s at %s", got, tc.want, trimTime)
			}
		})
	}
}

func svm(name, group, resource string, conditions ...string) unstructured.Unstructured {
	var conds []any
	for _, c := range conditions {
		conds = append(conds, map[string]any{"type": c, "status": "True", "lastTransitionTime": "2026-11-20T10:00:05Z"})
	}
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"resource": map[string]any{"group": group, "resource": resource}},
		"status":   map[string]any{"conditions": conds},
	}}
}

// TestTrimEvidence: the rule of the webhook's judgement of a trim of
// status.storedVersions from [v1 v2] (storage v2, generation 7).
func TestTrimEvidence(t *testing.T) {
	succeededB := svm("widgets-b", "example.com", "widgets", "Running", "Succeeded")
	for _, tc := range []struct {
		name  string
		edits []func(*apiextv1.CustomResourceDefinition)
		after []string
		svms  []unstructured.Unstructured
		// want is the evidence, nil when none.
		want *Evidence
	}{
		{name: "a current record", edits: []func(*apiextv1.CustomResourceDefinition){withRecord("v2", 7)},
			want: &Evidence{Kind: EvidenceRecord, Record: Record{Version: "v2", Generation: 7}, Version: "v2"}},
		{name: "a record of an earlier generation", edits: []func(*apiextv1.CustomResourceDefinition){withRecord("v2", 6)}},
		{name: "a record of another storage version", edits: []func(*apiextv1.CustomResourceDefinition){withRecord("v1", 7)}, after: []string{"v1"}},
		{name: "an old-format record", edits: []func(*apiextv1.CustomResourceDefinition){withOldFormatRecord("v2")}},
		{name: "a current record whose version the trim drops", edits: []func(*apiextv1.CustomResourceDefinition){withRecord("v2", 7)}, after: []string{"v1"}},

		{name: "the migration the condition names, succeeded, at the current generation",
			edits: []func(*apiextv1.CustomResourceDefinition){running("widgets-b", 7)}, svms: []unstructured.Unstructured{succeededB},
			want: &Evidence{Kind: EvidenceMigration, Migration: "widgets-b", Version: "v2"}},
		{name: "a migration that succeeded, not the one the condition names",
			edits: []func(*apiextv1.CustomResourceDefinition){running("widgets-c", 7)},
			svms:  []unstructured.Unstructured{succeededB, svm("widgets-c", "example.com", "widgets", "Running")}},
		{name: "the migration the condition names, at an older generation",
			edits: []func(*apiextv1.CustomResourceDefinition){running("widgets-b", 6)}, svms: []unstructured.Unstructured{succeededB}},
		{name: "the migration the condition names, failed (1.37.0 to 1.37.2 trim anyway)",
			edits: []func(*apiextv1.CustomResourceDefinition){running("widgets-b", 7)},
			svms:  []unstructured.Unstructured{svm("widgets-b", "example.com", "widgets", "Running", "Failed")}},
		{name: "the migration the condition names, both succeeded and failed",
			edits: []func(*apiextv1.CustomResourceDefinition){running("widgets-b", 7)},
			svms:  []unstructured.Unstructured{svm("widgets-b", "example.com", "widgets", "Succeeded", "Failed")}},
		{name: "the migration the condition names is of another resource",
			edits: []func(*apiextv1.CustomResourceDefinition){running("widgets-b", 7)},
			svms:  []unstructured.Unstructured{svm("widgets-b", "example.com", "gadgets", "Succeeded")}},
		{name: "the migration the condition names is gone",
			edits: []func(*apiextv1.CustomResourceDefinition){running("widgets-b", 7)}},
		{name: "a condition that names no migration",
			edits: []func(*apiextv1.CustomResourceDefinition){migrating(apiextv1.ConditionTrue, MigratorRunningReason, "Migration is running", 7)},
			svms:  []unstructured.Unstructured{succeededB}},
		{name: "the condition ended (status False)",
			edits: []func(*apiextv1.CustomResourceDefinition){migrating(apiextv1.ConditionFalse, MigratorSucceededReason, "Migration widgets-b is running", 7)},
			svms:  []unstructured.Unstructured{succeededB}},
		{name: "the migration succeeded, but the trim keeps a version other than the storage version",
			edits: []func(*apiextv1.CustomResourceDefinition){running("widgets-b", 7)}, svms: []unstructured.Unstructured{succeededB},
			after: []string{"v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after := tc.after
			if after == nil {
				after = []string{"v2"}
			}
			old := evidenceCRD([]string{"v1", "v2"}, tc.edits...)
			got, ok, err := TrimEvidence(context.Background(), old, after, func(context.Context) ([]unstructured.Unstructured, error) {
				return tc.svms, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == nil && ok:
				t.Fatalf("evidence %+v, want none", got)
			case tc.want != nil && (!ok || got != *tc.want):
				t.Fatalf("evidence %+v (ok %v), want %+v", got, ok, *tc.want)
			}
		})
	}

	t.Run("no lister: no migration evidence, nothing read", func(t *testing.T) {
		_, ok, err := TrimEvidence(context.Background(), evidenceCRD([]string{"v1", "v2"}, running("widgets-b", 7)), []string{"v2"}, nil)
		if ok || err != nil {
			t.Fatalf("ok %v, err %v", ok, err)
		}
	})
	t.Run("the migrations cannot be read: an error", func(t *testing.T) {
		boom := errors.New("forbidden")
		_, ok, err := TrimEvidence(context.Background(), evidenceCRD([]string{"v1", "v2"}, running("widgets-b", 7)), []string{"v2"},
			func(context.Context) ([]unstructured.Unstructured, error) { return nil, boom })
		if ok || !errors.Is(err, boom) {
			t.Fatalf("ok %v, err %v", ok, err)
		}
	})
}

// TestMigratorWordsMatchController pins the condition this package reads
// to the source of the cluster's migrator at the version of
// k8s.io/kubernetes in go.mod (pkg/controller/storageversionmigrator,
// migrationrunner.go): the field manager, the reasons, and the message
// that names the running migration.
func TestMigratorWordsMatchController(t *testing.T) {
	out, err := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Skipf("k8s.io/kubernetes not available from the module cache: %v", err)
	}
	var mod struct{ Dir, Version string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download -json k8s.io/kubernetes: %v: %s", err, out)
	}
	src, err := os.ReadFile(filepath.Join(mod.Dir, "pkg", "controller", "storageversionmigrator", "migrationrunner.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`MigrationRunnerControllerName string = "` + MigratorFieldManager + `"`,
		`const migrationRunningReason = "` + MigratorRunningReason + `"`,
		`WithReason("` + MigratorRunningReason + `")`,
		`WithMessage(fmt.Sprintf("` + migratorRunningPrefix + `%s` + migratorRunningSuffix + `", svm.Name))`,
		`WithObservedGeneration(crd.Generation)`,
		`reason = "` + MigratorSucceededReason + `"`,
		`reason = "` + MigratorFailedReason + `"`,
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("k8s.io/kubernetes %s migrationrunner.go no longer has %s", mod.Version, want)
		}
	}
}

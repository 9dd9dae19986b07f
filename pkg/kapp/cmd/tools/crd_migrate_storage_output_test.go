package tools

import (
	"bytes"
	"testing"

	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/migration"
	"github.com/stretchr/testify/require"
)

// The words of `kapp tools crd-migrate-storage` (crd_migrate_storage_output.go),
// from the facts the migration hands its UI; the migration's own tests
// (pkg/kapp/migration) assert those facts.

// switchedPlan is a CRD whose storage moved from v1alpha1 to v1, with 12
// objects to rewrite.
func switchedPlan() *migration.Plan {
	return &migration.Plan{Name: "widgets.example.com", Storage: "v1", Stored: []string{"v1alpha1", "v1"},
		Versions: []string{"v1alpha1", "v1"}, Objects: 12}
}

// trimmedPlan is a CRD whose status.storedVersions is the storage version
// alone; stale objects name another version in their managedFields.
func trimmedPlan(name string, objects, stale int, fields migration.FieldSetPolicy) *migration.Plan {
	return &migration.Plan{Name: name, Storage: "v1", Stored: []string{"v1"}, Versions: []string{"v1alpha1", "v1"},
		Objects: objects, StaleManagedFields: stale, ManagedFields: fields}
}

// webhookFieldsDiffer: a conversion webhook, and v1alpha1 declares other
// fields than v1: its managedFields entries are dropped.
var webhookFieldsDiffer = migration.FieldSetPolicy{Webhook: true, Versions: []string{"v1alpha1", "v1"}, Same: []string{"v1"}}

// printed runs show against a UI that writes to a buffer, confirmed as with --yes.
func printed(t *testing.T, show func(migrateUI) error) string {
	t.Helper()
	var out bytes.Buffer
	confUI := ui.NewWrappingConfUI(ui.NewWriterUI(&out, &out, ui.NewNoopLogger()), ui.NewNoopLogger())
	confUI.EnableNonInteractive()
	require.NoError(t, show(newMigrateUI(confUI)))
	confUI.Flush()
	t.Logf("output:\n%s", out.String())
	return out.String()
}

// TestMigratePlanTable: the plan's table; a CRD whose storedVersions are
// already trimmed but whose objects' managedFields name other versions
// says whether those entries move (their fields mean the same at the
// storage version) or may be dropped (a conversion webhook, and versions
// whose fields differ).
func TestMigratePlanTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan *migration.Plan
		want string // the objects column
	}{
		{name: "objects to rewrite", plan: switchedPlan(), want: "12"},
		{name: "nothing to do", plan: trimmedPlan("widgets.example.com", 5, 0, migration.FieldSetPolicy{}), want: "-"},
		{name: "conversion None", plan: trimmedPlan("widgets.example.com", 5, 2, migration.FieldSetPolicy{}), want: "5 (managedFields of 2 to move)"},
		{name: "webhook, same fields", plan: trimmedPlan("widgets.example.com", 5, 2,
			migration.FieldSetPolicy{Webhook: true, Versions: []string{"v1alpha1", "v1"}, Same: []string{"v1", "v1alpha1"}}),
			want: "5 (managedFields of 2 to move)"},
		{name: "webhook, fields differ", plan: trimmedPlan("widgets.example.com", 5, 2, webhookFieldsDiffer),
			want: "5 (managedFields of 2 to move or drop)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := migratePlanTable([]*migration.Plan{tc.plan})
			require.Len(t, table.Rows, 1)
			require.Equal(t, tc.want, table.Rows[0][3].String())
		})
	}

	out := printed(t, func(m migrateUI) error {
		return m.Planned([]*migration.Plan{trimmedPlan("gadgets.example.com", 3, 0, migration.FieldSetPolicy{}), switchedPlan(),
			trimmedPlan("things.example.com", 5, 1, migration.FieldSetPolicy{})})
	})
	require.Regexp(t, `gadgets\.example\.com\s+v1\s+\[v1\] \(unchanged\)\s+-`, out)
	require.Regexp(t, `widgets\.example\.com\s+v1\s+\[v1alpha1 v1\] -> \[v1\]\s+12`, out)
	require.Regexp(t, `things\.example\.com\s+v1\s+\[v1\] \(unchanged\)\s+5 \(managedFields of 1 to move\)`, out)
}

// TestMigratePreviewLines: what a run that ends at its preview says
// (nothing to do, a dry run), and the line of the method that runs.
func TestMigratePreviewLines(t *testing.T) {
	rewrite := "Would rewrite the 12 objects of crd widgets.example.com at v1 with their managedFields at v1 (those already stored at v1 " +
		"with managedFields at v1 cost no write), then set status.storedVersions [v1alpha1 v1] -> [v1]"
	for _, tc := range []struct {
		name    string
		preview migration.Preview
		want    []string // nil: the run goes on (confirmation, then the method line)
	}{
		{name: "nothing to do", preview: migration.Preview{Plans: []*migration.Plan{trimmedPlan("widgets.example.com", 5, 0, migration.FieldSetPolicy{})}},
			want: []string{"Nothing to migrate: status.storedVersions of 1 CRD is the storage version alone, and no managedFields name another version"}},
		{name: "nothing to do, dry run", preview: migration.Preview{DryRun: true,
			Plans: []*migration.Plan{trimmedPlan("gadgets.example.com", 0, 0, migration.FieldSetPolicy{}), trimmedPlan("widgets.example.com", 5, 0, migration.FieldSetPolicy{})}},
			want: []string{"Nothing to migrate: status.storedVersions of 2 CRDs is the storage version alone, and no managedFields name another version"}},
		{name: "dry run, rewrite", preview: migration.Preview{DryRun: true, Method: migration.MethodRewrite,
			Plans: []*migration.Plan{trimmedPlan("gadgets.example.com", 3, 0, migration.FieldSetPolicy{}), switchedPlan()}},
			want: []string{rewrite, "Dry run: nothing changed"}},
		{name: "dry run, migrator", preview: migration.Preview{DryRun: true, Method: migration.MethodMigrator, Plans: []*migration.Plan{switchedPlan()}},
			want: []string{"Would move the managedFields of the objects of crd widgets.example.com to v1 where they name another version, " +
				"then create a StorageVersionMigration (12 objects at v1), whose migrator sets status.storedVersions [v1alpha1 v1] -> [v1]",
				"Dry run: nothing changed"}},
		{name: "dry run, managedFields after the trim", preview: migration.Preview{DryRun: true, Method: migration.MethodRewrite,
			Plans: []*migration.Plan{trimmedPlan("widgets.example.com", 5, 1, migration.FieldSetPolicy{})}},
			want: []string{"Would move the managedFields of 1 object of crd widgets.example.com to v1 (status.storedVersions is [v1] already)",
				"Dry run: nothing changed"}},
		{name: "dry run, entries dropped under a webhook", preview: migration.Preview{DryRun: true, Method: migration.MethodRewrite,
			Plans: []*migration.Plan{trimmedPlan("widgets.example.com", 3, 2, webhookFieldsDiffer)}},
			want: []string{"Would move the managedFields of 2 objects of crd widgets.example.com to v1 (status.storedVersions is [v1] already)",
				"crd widgets.example.com converts through a webhook: managedFields entries at v1alpha1 (and at versions it no longer has) " +
					"would be dropped, not moved to v1: their fields name other data at v1",
				"Dry run: nothing changed"}},
		{name: "pending, not a dry run", preview: migration.Preview{Method: migration.MethodRewrite, Plans: []*migration.Plan{switchedPlan()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, previewLines(tc.preview))
			out := printed(t, func(m migrateUI) error { return m.Preview(tc.preview) })
			for _, l := range tc.want {
				require.Contains(t, out, l+"\n")
			}
			if tc.want == nil {
				require.Contains(t, out, "Method: rewrite (")
			} else {
				require.NotContains(t, out, "Method:")
			}
		})
	}

	require.Equal(t, "Method: migrator (the cluster serves storagemigration.k8s.io/v1: its storage version migrator rewrites the objects)",
		methodLine(migration.Preview{Method: migration.MethodMigrator, Why: "the cluster serves storagemigration.k8s.io/v1: its storage version migrator rewrites the objects"}))
}

// TestMigrateDroppedTable: the managedFields entries dropped, after the
// migration; nothing when none was.
func TestMigrateDroppedTable(t *testing.T) {
	out := printed(t, func(m migrateUI) error {
		return m.Finished(migration.Outcome{Dropped: []migration.DroppedManagedFields{{CRD: "widgets.example.com", Manager: "flux",
			Operation: "Apply", APIVersion: "example.com/v1alpha1", Storage: "v1", Objects: 2}}})
	})
	require.Regexp(t, `managedFields entries dropped\s+CRD\s+Manager\s+Operation\s+Subresource\s+apiVersion\s+Objects\s+Why\s+`+
		`widgets\.example\.com\s+flux\s+Apply\s+-\s+example\.com/v1alpha1\s+2\s+conversion Webhook, and v1alpha1 declares other fields than v1`, out)

	require.Empty(t, printed(t, func(m migrateUI) error { return m.Finished(migration.Outcome{}) }))
}

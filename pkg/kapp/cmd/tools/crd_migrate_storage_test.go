package tools

import (
	"bytes"
	"testing"

	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/migration"
	"github.com/stretchr/testify/require"
)

// The migration itself is tested in pkg/kapp/migration; here, the
// command's inputs.

type migrateRun struct {
	names, files []string
	to           string
	method       string // MethodAuto when empty
	concurrency  int    // DefaultMigrationConcurrency when 0
	dryRun       bool
}

// runMigrate runs the command in-process with invalid inputs: the test
// fails if the cluster is contacted.
func runMigrate(t *testing.T, r migrateRun) error {
	t.Helper()
	var out bytes.Buffer
	confUI := ui.NewWrappingConfUI(ui.NewWriterUI(&out, &out, ui.NewNoopLogger()), ui.NewNoopLogger())
	confUI.EnableNonInteractive() // --yes
	o := NewCRDMigrateStorageOptions(confUI, nil)
	o.CRDFlags = CRDMigrateStorageCRDFlags{Names: r.names, Files: r.files}
	o.MigrateFlags = CRDMigrateStorageFlags{To: r.to, Method: r.method, Concurrency: r.concurrency, DryRun: r.dryRun}
	if r.method == "" {
		o.MigrateFlags.Method = migration.MethodAuto
	}
	if r.concurrency == 0 {
		o.MigrateFlags.Concurrency = migration.DefaultMigrationConcurrency
	}
	o.cluster = func() (migration.Cluster, error) {
		t.Fatalf("cluster contacted although the inputs are invalid")
		return nil, nil
	}
	err := o.Run()
	confUI.Flush()
	t.Logf("output:\n%s", out.String())
	return err
}

func TestCRDMigrateStorageInputs(t *testing.T) {
	cases := []struct {
		name     string
		run      migrateRun
		contains string
	}{
		{name: "no CRD named", contains: "expected at least one --crd or --file naming the CRDs to migrate"},
		{name: "concurrency below 1", run: migrateRun{names: []string{"widgets.example.com"}, concurrency: -1},
			contains: "expected --concurrency to be at least 1, got -1"},
		{name: "empty --crd", run: migrateRun{names: []string{" "}}, contains: "expected --crd to name a CRD (plural.group), got an empty name"},
		{name: "files without CRDs", run: migrateRun{files: []string{td("config-warn.yaml")}},
			contains: "no CRDs to migrate: the --file inputs (" + td("config-warn.yaml") + ") hold no apiextensions.k8s.io/v1 CustomResourceDefinition"},
		{name: "not YAML", run: migrateRun{files: []string{td("not-yaml.yaml")}},
			contains: "reading CRDs: file '" + td("not-yaml.yaml") + "' doc 1: invalid input: not valid YAML"},
		{name: "missing file", run: migrateRun{files: []string{td("nope.yaml")}}, contains: "nope.yaml"},
		{name: "stdin twice", run: migrateRun{files: []string{"-", "-"}}, contains: "standard input (-) at most once"},
		{name: "unknown --method", run: migrateRun{names: []string{"widgets.example.com"}, method: "magic"},
			contains: `expected --method to be one of auto, migrator, rewrite, got "magic"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := runMigrate(t, tc.run)
			requirePlainError(t, err)
			require.ErrorContains(t, err, tc.contains)
		})
	}

	t.Run("--crd, then the CRDs of --file, once each", func(t *testing.T) {
		o := NewCRDMigrateStorageOptions(nil, nil)
		o.CRDFlags = CRDMigrateStorageCRDFlags{Names: []string{"gadgets.example.com", "gadgets.example.com"},
			Files: []string{td("new-safe.yaml")}}
		names, err := o.crdNames()
		require.NoError(t, err)
		require.Equal(t, []string{"gadgets.example.com", "widgets.example.com"}, names)
	})
}

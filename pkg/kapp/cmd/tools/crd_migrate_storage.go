package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	cmdapp "carvel.dev/kapp/pkg/kapp/cmd/app"
	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/cppforlife/go-cli-ui/ui"
	uitable "github.com/cppforlife/go-cli-ui/ui/table"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/spf13/cobra"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// ErrNoCRDsToMigrate is returned when the inputs name no CRD.
var ErrNoCRDsToMigrate = errors.New("no CRDs to migrate")

// CRDMigrateStorageCRDFlags select the CRDs: by name, or every CRD in files.
type CRDMigrateStorageCRDFlags struct {
	Names []string
	Files []string
}

func (s *CRDMigrateStorageCRDFlags) Set(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&s.Names, "crd", nil, "Set name of a CRD to migrate (format: plural.group) (can repeat)")
	cmd.Flags().StringSliceVarP(&s.Files, "file", "f", nil,
		"Set file whose CRDs to migrate, by name (format: /tmp/foo, https://..., -) (can repeat)")
}

// CRDMigrateStorageFlags shape the migration.
type CRDMigrateStorageFlags struct {
	To          string
	Method      string
	Concurrency int
	DryRun      bool
}

func (s *CRDMigrateStorageFlags) Set(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.To, "to", "",
		"Set the version to migrate to; it must be the CRD's storage version (default: the current storage version)")
	cmd.Flags().StringVar(&s.Method, "method", MethodAuto,
		"Set how objects are migrated (auto: the cluster's storage version migrator where the cluster serves storagemigration.k8s.io/v1, else rewrite; migrator; rewrite: this command rewrites them)")
	cmd.Flags().IntVar(&s.Concurrency, "concurrency", DefaultMigrationConcurrency, "Set maximum number of object updates in flight per CRD (rewrite)")
	cmd.Flags().BoolVar(&s.DryRun, "dry-run", false, "Print what would be migrated without changing anything")
}

type CRDMigrateStorageOptions struct {
	ui          ui.UI
	depsFactory cmdcore.DepsFactory

	CRDFlags     CRDMigrateStorageCRDFlags
	MigrateFlags CRDMigrateStorageFlags

	// cluster reaches the cluster; nil uses kapp's clients (tests set it).
	cluster func() (migrationCluster, error)
	// tune adjusts the migrator before it runs (tests shorten its waits).
	tune func(*storageMigrator)
}

func NewCRDMigrateStorageOptions(ui ui.UI, depsFactory cmdcore.DepsFactory) *CRDMigrateStorageOptions {
	return &CRDMigrateStorageOptions{ui: ui, depsFactory: depsFactory}
}

func NewCRDMigrateStorageCmd(o *CRDMigrateStorageOptions, _ cmdcore.FlagsFactory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "crd-migrate-storage",
		Short: "Rewrite stored custom resources at their CRD's storage version and trim status.storedVersions",
		Long: `Rewrite every stored custom resource of the given CRDs at the CRD's storage
version, then set the CRD's status.storedVersions to the storage version alone.

Two methods (--method): where the cluster serves storagemigration.k8s.io/v1
(Kubernetes 1.37 and later), the cluster's own storage version migrator does
it: the command creates a StorageVersionMigration per CRD, follows its
conditions, checks that the migrator trimmed status.storedVersions and deletes
the migration. Elsewhere the command rewrites the objects itself (below).
--method auto (the default) picks the migrator when the cluster serves it, and
prints its choice.
This is the step that makes removing an old version of a CRD safe: the
CRDUpgradeSafety check blocks the removal (storedVersionRemoval) while the
version is in status.storedVersions. See docs/migrate.md for the whole path.

With --method rewrite, for each CRD: its storage version must be --to (when
given) and served. Every
custom resource (all namespaces) is listed at the storage version and written
back unchanged; the apiserver re-encodes it at the storage version, and skips
the write for objects already stored at it. Only when every object is written
is status.storedVersions trimmed, through the status subresource, and only if
the CRD did not change meanwhile. Nothing is written when any CRD cannot be
migrated.

An interrupted run changes no status.storedVersions; running the command again
finishes the job (objects already rewritten cost no write).

Exit status:
  0  migrated (or nothing to do, or --dry-run)
  1  not migrated: bad input, a CRD that cannot be migrated, cluster errors,
     objects that could not be rewritten`,
		RunE:        func(_ *cobra.Command, _ []string) error { return o.Run() },
		Annotations: map[string]string{cmdapp.TTYByDefaultKey: ""},
		Example: `
  # Migrate the stored objects of a CRD to its storage version
  kapp tools crd-migrate-storage --crd widgets.example.com

  # The same, asserting that v1 is the storage version, without asking
  kapp tools crd-migrate-storage --crd widgets.example.com --to v1 -y

  # Every CRD of a release, first without changing anything
  kapp tools crd-migrate-storage -f release-1.1/crds/ --dry-run`,
	}
	o.CRDFlags.Set(cmd)
	o.MigrateFlags.Set(cmd)
	return cmd
}

func (o *CRDMigrateStorageOptions) Run() error {
	ctx := context.Background()
	if o.MigrateFlags.Concurrency < 1 {
		return fmt.Errorf("expected --concurrency to be at least 1, got %d", o.MigrateFlags.Concurrency)
	}
	if !slices.Contains(migrationMethods, o.MigrateFlags.Method) {
		return fmt.Errorf("expected --method to be one of %s, got %q", strings.Join(migrationMethods, ", "), o.MigrateFlags.Method)
	}
	names, err := o.crdNames()
	if err != nil {
		return err
	}
	cluster, err := o.migrationCluster()
	if err != nil {
		return err
	}

	plans, err := o.plan(ctx, cluster, names)
	if err != nil {
		return err
	}
	if err := printTable(o.ui, "CRDs", migrationTable(plans)); err != nil {
		return err
	}
	method, why, err := o.method(ctx, cluster)
	if err != nil {
		return err
	}
	pending := 0
	for _, p := range plans {
		if !p.done() {
			pending++
		}
	}
	if pending == 0 {
		o.ui.PrintLinef("Nothing to migrate: status.storedVersions of %s is the storage version alone", plural.Count(len(plans), "CRD", "CRDs"))
		return nil
	}
	if o.MigrateFlags.DryRun {
		for _, p := range plans {
			if !p.done() {
				if method == MethodMigrator {
					o.ui.PrintLinef("Would create a StorageVersionMigration for crd %s (%s at %s), whose migrator sets status.storedVersions %s",
						p.name, plural.Count(p.objects, "object", "objects"), p.storage, p.storedVersionsChange())
					continue
				}
				o.ui.PrintLinef("Would rewrite the %s of crd %s at %s (those already stored at %s cost no write), then set status.storedVersions %s",
					plural.Count(p.objects, "object", "objects"), p.name, p.storage, p.storage, p.storedVersionsChange())
			}
		}
		o.ui.PrintLinef("Dry run: nothing changed")
		return nil
	}
	if err := o.ui.AskForConfirmation(); err != nil {
		return err
	}

	o.ui.PrintLinef("Method: %s (%s)", method, why)
	m := &storageMigrator{
		method:          method,
		cluster:         cluster,
		msgs:            cmdcore.NewPlainMessagesUI(o.ui),
		concurrency:     o.MigrateFlags.Concurrency,
		pageSize:        kube.DefaultPageSize,
		storageWait:     time.Minute,
		pollInterval:    500 * time.Millisecond,
		progressEvery:   5 * time.Second,
		progressByCount: 10,
		// The controller's RESTMapper resyncs discovery every 30 seconds.
		migratorRetryWait: 35 * time.Second,
	}
	if o.tune != nil {
		o.tune(m)
	}
	var total migrationCounts
	done := 0
	for _, p := range plans {
		if p.done() {
			done++
			continue
		}
		verb := "rewriting"
		if method == MethodMigrator {
			verb = "migrating"
		}
		m.msgs.NotifySection("crd %s: %s %s at %s [%d/%d CRDs done]",
			p.name, verb, plural.Count(p.objects, "object", "objects"), p.storage, done, pending)
		counts, err := m.migrate(ctx, p)
		total.add(counts)
		if err != nil {
			return err
		}
		done++
		m.msgs.Notify([]string{fmt.Sprintf("crd %s: status.storedVersions %s", p.name, p.storedVersionsChange())})
	}
	if method == MethodMigrator {
		m.msgs.NotifySection("migration complete [%d/%d CRDs done]: by the cluster's storage version migrator", done, len(plans))
		return nil
	}
	m.msgs.NotifySection("migration complete [%d/%d CRDs done]: %s", done, len(plans), total.describe("the storage version"))
	return nil
}

// method resolves --method: auto is the migrator where the cluster serves
// storagemigration.k8s.io/v1, rewrite elsewhere. It returns why, for the
// line that says which method runs.
func (o *CRDMigrateStorageOptions) method(ctx context.Context, cluster migrationCluster) (string, string, error) {
	method := o.MigrateFlags.Method
	if method == MethodRewrite {
		return method, "--method rewrite: this command rewrites the objects", nil
	}
	serves, err := cluster.ServesStorageMigration(ctx)
	if err != nil {
		return "", "", err
	}
	switch {
	case serves:
		return MethodMigrator, "the cluster serves " + svmResource.GroupVersion().String() + ": its storage version migrator rewrites the objects", nil
	case method == MethodMigrator:
		return "", "", fmt.Errorf("--method migrator: the cluster does not serve %s StorageVersionMigrations (Kubernetes 1.37 and later do); use --method rewrite",
			svmResource.GroupVersion())
	}
	return MethodRewrite, "the cluster does not serve " + svmResource.GroupVersion().String() + ": this command rewrites the objects", nil
}

// crdNames returns the names of --crd, then of the CRDs in --file, in
// order and without repeats.
func (o *CRDMigrateStorageOptions) crdNames() ([]string, error) {
	if len(o.CRDFlags.Names) == 0 && len(o.CRDFlags.Files) == 0 {
		return nil, fmt.Errorf("expected at least one --crd or --file naming the CRDs to migrate")
	}
	if stdinCount(o.CRDFlags.Files) > 1 {
		return nil, fmt.Errorf("expected standard input (-) at most once among --file")
	}
	var names []string
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	for _, name := range o.CRDFlags.Names {
		if name = strings.TrimSpace(name); name == "" {
			return nil, fmt.Errorf("expected --crd to name a CRD (plural.group), got an empty name")
		}
		add(name)
	}
	if len(o.CRDFlags.Files) > 0 {
		set, err := inputs.Load(o.CRDFlags.Files, "input")
		if err != nil {
			return nil, fmt.Errorf("reading CRDs: %w", err)
		}
		if len(set.CRDs) == 0 {
			return nil, fmt.Errorf("%w: the --file inputs (%s) hold no apiextensions.k8s.io/v1 CustomResourceDefinition",
				ErrNoCRDsToMigrate, strings.Join(o.CRDFlags.Files, ", "))
		}
		for _, c := range set.CRDs {
			add(c.CRD.Name)
		}
	}
	return names, nil
}

// plan reads every CRD and checks it can be migrated, before anything is
// written: all reasons that stop the migration are reported together.
// Then it counts the objects of the CRDs to migrate.
func (o *CRDMigrateStorageOptions) plan(ctx context.Context, cluster migrationCluster, names []string) ([]*migrationPlan, error) {
	plans := make([]*migrationPlan, len(names))
	cannot := make([]error, len(names))
	err := parallel.ForEach(ctx, len(names), evaluation.DefaultConcurrency, func(ctx context.Context, i int) error {
		u, err := cluster.GetCRD(ctx, names[i])
		switch {
		case apierrors.IsNotFound(err):
			cannot[i] = cannotMigrate(names[i], errCRDNotFound, "no such CustomResourceDefinition on the cluster")
			return nil
		case err != nil:
			return fmt.Errorf("getting crd %s: %w", names[i], err)
		}
		p, err := planMigration(u, o.MigrateFlags.To)
		if errors.Is(err, ErrCannotMigrate) {
			cannot[i] = err
			return nil
		}
		if err != nil {
			return err
		}
		if !p.done() {
			crd := &apiextv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
				return fmt.Errorf("decoding crd %s: %w", names[i], err)
			}
			if p.objects, err = cluster.CountCustomResources(ctx, crd); err != nil {
				return err
			}
		}
		plans[i] = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := errors.Join(cannot...); err != nil {
		return nil, fmt.Errorf("nothing changed: %w", err)
	}
	return plans, nil
}

func (o *CRDMigrateStorageOptions) migrationCluster() (migrationCluster, error) {
	if o.cluster != nil {
		return o.cluster()
	}
	return migrationClusterFromDeps(o.depsFactory)
}

// migrationTable lists what will happen to each CRD. Its keys are the JSON
// keys of the rows under --json.
func migrationTable(plans []*migrationPlan) uitable.Table {
	table := uitable.Table{
		Title:   "CRD storage migration",
		Content: "CRDs",
		Header: []uitable.Header{
			{Key: "crd", Title: "CRD"},
			{Key: "storage_version", Title: "Storage version"},
			{Key: "stored_versions", Title: "status.storedVersions"},
			{Key: "objects", Title: "Objects"},
		},
		SortBy: []uitable.ColumnSort{{Column: 0, Asc: true}},
	}
	for _, p := range plans {
		objects := strconv.Itoa(p.objects)
		if p.done() {
			objects = "-" // not counted: nothing to rewrite
		}
		table.Rows = append(table.Rows, []uitable.Value{
			uitable.NewValueString(p.name),
			uitable.NewValueString(p.storage),
			uitable.NewValueString(p.storedVersionsChange()),
			uitable.NewValueString(objects),
		})
	}
	return table
}

func joinSpace(s []string) string { return strings.Join(s, " ") }

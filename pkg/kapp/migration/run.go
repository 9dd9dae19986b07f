package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cppforlife/go-cli-ui/ui"
	uitable "github.com/cppforlife/go-cli-ui/ui/table"
	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Messages prints the progress of a migration: kapp's cmdcore.MessagesUI
// (a section line per CRD, then lines under it).
type Messages interface {
	NotifySection(msg string, args ...any)
	Notify(msgs []string)
}

// Request is one migration of `kapp tools crd-migrate-storage`.
type Request struct {
	// Names are the CRDs to migrate, in order, without repeats.
	Names []string
	// To, when set, must be the storage version of every CRD.
	To string
	// Method is one of MethodAuto, MethodMigrator, MethodRewrite.
	Method string
	// Concurrency bounds the object updates in flight per CRD (rewrite).
	Concurrency int
	// DryRun: plan and print, change nothing.
	DryRun bool

	Cluster Cluster
	// UI prints the plan, asks for confirmation and says which method runs.
	UI ui.UI
	// Messages prints the progress of the migration.
	Messages Messages
	// PrintTable prints the plan's table; nil: UI.PrintTable.
	PrintTable func(uitable.Table) error

	// tune adjusts the migrator before it runs (tests shorten its waits).
	tune func(*Migrator)
}

// Run plans the migration of every CRD of req (nothing is written when
// any cannot be migrated), prints the plan, asks for confirmation, then
// migrates the CRDs one after the other with the method req asks for
// (auto: the cluster's storage version migrator where it is served, else
// the client-side rewrite).
func Run(ctx context.Context, req Request) error {
	if err := req.Validate(); err != nil {
		return err
	}
	cluster := req.Cluster
	plans, err := PlanCRDs(ctx, cluster, req.Names, req.To)
	if err != nil {
		return err
	}
	printTable := req.PrintTable
	if printTable == nil {
		printTable = func(t uitable.Table) error { req.UI.PrintTable(t); return nil }
	}
	if err := printTable(Table(plans)); err != nil {
		return err
	}
	method, why, err := ResolveMethod(ctx, cluster, req.Method)
	if err != nil {
		return err
	}
	pending := 0
	for _, p := range plans {
		if p.Pending() {
			pending++
		}
	}
	if pending == 0 {
		req.UI.PrintLinef("Nothing to migrate: status.storedVersions of %s is the storage version alone, and no managedFields name another version",
			plural.Count(len(plans), "CRD", "CRDs"))
		return nil
	}
	if req.DryRun {
		for _, p := range plans {
			switch {
			case !p.Pending():
			case p.Done():
				req.UI.PrintLinef("Would move the managedFields of %s of crd %s to %s (status.storedVersions is [%s] already)",
					plural.Count(p.StaleManagedFields, "object", "objects"), p.Name, p.Storage, p.Storage)
			case method == MethodMigrator:
				req.UI.PrintLinef("Would move the managedFields of the objects of crd %s to %s where they name another version, "+
					"then create a StorageVersionMigration (%s at %s), whose migrator sets status.storedVersions %s",
					p.Name, p.Storage, plural.Count(p.Objects, "object", "objects"), p.Storage, p.StoredVersionsChange())
			default:
				req.UI.PrintLinef("Would rewrite the %s of crd %s at %s with their managedFields at %s (those already stored at %s with managedFields at %s cost no write), then set status.storedVersions %s",
					plural.Count(p.Objects, "object", "objects"), p.Name, p.Storage, p.Storage, p.Storage, p.Storage, p.StoredVersionsChange())
			}
		}
		for _, p := range plans {
			if drop := p.fields.droppedVersions(); p.Pending() && len(drop) > 0 {
				req.UI.PrintLinef("crd %s converts through a webhook: managedFields entries at %s (and at versions it no longer has) would be dropped, not moved to %s: "+
					"their fields name other data at %s", p.Name, strings.Join(drop, ", "), p.Storage, p.Storage)
			}
		}
		req.UI.PrintLinef("Dry run: nothing changed")
		return nil
	}
	if err := req.UI.AskForConfirmation(); err != nil {
		return err
	}

	req.UI.PrintLinef("Method: %s (%s)", method, why)
	m := &Migrator{
		method:          method,
		cluster:         cluster,
		msgs:            req.Messages,
		concurrency:     req.Concurrency,
		pageSize:        kube.DefaultPageSize,
		storageWait:     time.Minute,
		pollInterval:    500 * time.Millisecond,
		progressEvery:   5 * time.Second,
		progressByCount: 10,
		// The controller's RESTMapper resyncs discovery every 30 seconds.
		migratorRetryWait: 35 * time.Second,
	}
	if req.tune != nil {
		req.tune(m)
	}
	// One CRD's failure does not stop the others: each is migrated on its
	// own, and the failures are returned together at the end.
	var (
		total  migrationCounts
		failed []error
	)
	done, tried := 0, 0
	for _, p := range plans {
		if !p.Pending() {
			done++
			continue
		}
		switch {
		case p.Done():
			m.msgs.NotifySection("crd %s: moving the managedFields of %s to %s [%d/%d CRDs done]",
				p.Name, plural.Count(p.StaleManagedFields, "object", "objects"), p.Storage, tried, pending)
		case method == MethodMigrator:
			m.msgs.NotifySection("crd %s: migrating %s at %s [%d/%d CRDs done]",
				p.Name, plural.Count(p.Objects, "object", "objects"), p.Storage, tried, pending)
		default:
			m.msgs.NotifySection("crd %s: rewriting %s at %s [%d/%d CRDs done]",
				p.Name, plural.Count(p.Objects, "object", "objects"), p.Storage, tried, pending)
		}
		tried++
		counts, err := m.migrate(ctx, p)
		total.add(counts)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			failed = append(failed, err)
			m.msgs.Notify([]string{fmt.Sprintf("crd %s: not migrated (the error is at the end); going on with the other CRDs", p.Name)})
			continue
		}
		done++
		if !p.Done() {
			m.msgs.Notify([]string{fmt.Sprintf("crd %s: status.storedVersions %s", p.Name, p.StoredVersionsChange())})
		}
	}
	summary := total.describe("the storage version")
	if method == MethodMigrator {
		summary = "by the cluster's storage version migrator"
		if total.Managed > 0 {
			summary += fmt.Sprintf("; managedFields of %d moved to the storage version", total.Managed)
			if total.Dropped > 0 {
				summary += fmt.Sprintf(" (entries of %d dropped)", total.Dropped)
			}
		}
	}
	if len(failed) > 0 {
		m.msgs.NotifySection("migration incomplete [%d/%d CRDs done, %d failed]: %s", done, len(plans), len(failed), summary)
	} else {
		m.msgs.NotifySection("migration complete [%d/%d CRDs done]: %s", done, len(plans), summary)
	}
	if len(m.dropped) > 0 {
		sortDropped(m.dropped)
		if err := printTable(DroppedTable(m.dropped)); err != nil {
			failed = append(failed, err)
		}
	}
	return errors.Join(failed...)
}

// Validate checks the settings of req that need no cluster.
func (req Request) Validate() error {
	if req.Concurrency < 1 {
		return fmt.Errorf("expected --concurrency to be at least 1, got %d", req.Concurrency)
	}
	if !slices.Contains(migrationMethods, req.Method) {
		return fmt.Errorf("expected --method to be one of %s, got %q", strings.Join(migrationMethods, ", "), req.Method)
	}
	return nil
}

// ResolveMethod resolves a --method: auto is the migrator where the
// cluster serves storagemigration.k8s.io/v1 and its migrator never trims
// status.storedVersions after a failed migration (trimguard.go), rewrite
// elsewhere; migrator is refused where either is not so. It returns why,
// for the line that says which method runs.
func ResolveMethod(ctx context.Context, cluster Cluster, method string) (string, string, error) {
	if method == MethodRewrite {
		return method, "--method rewrite: this command rewrites the objects", nil
	}
	serves, err := cluster.ServesStorageMigration(ctx)
	if err != nil {
		return "", "", err
	}
	if !serves {
		if method == MethodMigrator {
			return "", "", fmt.Errorf("--method migrator: the cluster does not serve %s StorageVersionMigrations (Kubernetes 1.37 and later do); use --method rewrite",
				svmResource.GroupVersion())
		}
		return MethodRewrite, "the cluster does not serve " + svmResource.GroupVersion().String() + ": this command rewrites the objects", nil
	}
	info, err := cluster.ServerVersion(ctx)
	if err != nil {
		return "", "", fmt.Errorf("reading the apiserver's version: %w", err)
	}
	if trim := migratorTrimOf(info); trim.TrimsOnFailure {
		if method == MethodMigrator {
			return "", "", fmt.Errorf("--method migrator: %w: %s; use --method rewrite (--method auto picks it on this version)",
				ErrMigratorTrimsOnFailure, trim.reason())
		}
		return MethodRewrite, "the cluster serves " + svmResource.GroupVersion().String() + ", but " + trim.reason() + ": this command rewrites the objects", nil
	}
	return MethodMigrator, "the cluster serves " + svmResource.GroupVersion().String() + ": its storage version migrator rewrites the objects", nil
}

// PlanCRDs reads every CRD and checks it can be migrated to the version
// to (each one's storage version when empty), before anything is written:
// all reasons that stop the migration are reported together (errors
// wrapping ErrCannotMigrate). Then it counts the objects of the CRDs to
// migrate.
func PlanCRDs(ctx context.Context, cluster Cluster, names []string, to string) ([]*Plan, error) {
	plans := make([]*Plan, len(names))
	cannot := make([]error, len(names))
	err := parallel.ForEach(ctx, len(names), kube.DefaultConcurrency, func(ctx context.Context, i int) error {
		u, err := cluster.GetCRD(ctx, names[i])
		switch {
		case apierrors.IsNotFound(err):
			cannot[i] = cannotMigrate(names[i], errCRDNotFound, "no such CustomResourceDefinition on the cluster")
			return nil
		case err != nil:
			return fmt.Errorf("getting crd %s: %w", names[i], err)
		}
		p, err := planMigration(u, to)
		if errors.Is(err, ErrCannotMigrate) {
			cannot[i] = err
			return nil
		}
		if err != nil {
			return err
		}
		if p.Done() {
			// Cheap (one LIST, no write) and needed: writers at another
			// version may have recorded managedFields there since the
			// storage migration.
			if p.Objects, p.StaleManagedFields, err = countStaleManagedFields(ctx, cluster, p); err != nil {
				return err
			}
		} else {
			crd := &apiextv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
				return fmt.Errorf("decoding crd %s: %w", names[i], err)
			}
			if p.Objects, err = cluster.CountCustomResources(ctx, crd); err != nil {
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

// countStaleManagedFields lists the objects of p at its storage version
// and counts them, and those whose managedFields name another version.
func countStaleManagedFields(ctx context.Context, cluster Cluster, p *Plan) (objects, stale int, err error) {
	objs := cluster.Objects(p.gvr())
	opts := metav1.ListOptions{Limit: kube.DefaultPageSize}
	for {
		list, err := objs.List(ctx, opts)
		if err != nil {
			if token, ok := expiredListContinue(err); ok && opts.Continue != "" {
				opts.Continue = token
				continue
			}
			return 0, 0, fmt.Errorf("crd %s: listing %s at %s: %w", p.Name, p.Plural, p.Storage, err)
		}
		for i := range list.Items {
			objects++
			if len(staleManagedFields(&list.Items[i], p.apiVersion())) > 0 {
				stale++
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return objects, stale, nil
		}
	}
}

// Table lists what will happen to each CRD. Its keys are the JSON keys of
// the rows under kapp's --json.
func Table(plans []*Plan) uitable.Table {
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
		objects := strconv.Itoa(p.Objects)
		switch {
		case !p.Pending():
			objects = "-" // nothing to rewrite
		case p.Done():
			verb := "move"
			if len(p.fields.droppedVersions()) > 0 {
				verb = "move or drop" // entries at versions whose fields differ are dropped
			}
			objects = fmt.Sprintf("%d (managedFields of %d to %s)", p.Objects, p.StaleManagedFields, verb)
		}
		table.Rows = append(table.Rows, []uitable.Value{
			uitable.NewValueString(p.Name),
			uitable.NewValueString(p.Storage),
			uitable.NewValueString(p.StoredVersionsChange()),
			uitable.NewValueString(objects),
		})
	}
	return table
}

func joinSpace(s []string) string { return strings.Join(s, " ") }

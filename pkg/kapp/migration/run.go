package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Messages prints the progress of a migration: kapp's cmdcore.MessagesUI
// (a section line per CRD, then lines under it). Its lines are the
// progress events of a migration, worded here as evaluation words the
// progress of its live checks.
type Messages interface {
	NotifySection(msg string, args ...any)
	Notify(msgs []string)
}

// UI is how a migration shows itself and asks before it changes
// anything: the command implements it with go-cli-ui
// (pkg/kapp/cmd/tools/crd_migrate_storage_output.go: the tables, the
// lines of the plan, the confirmation), the tests record it. Run hands it
// facts; their words are the UI's.
type UI interface {
	// Messages receives the progress while the CRDs are migrated.
	Messages
	// Planned is told the plan of every CRD, before the method is
	// resolved.
	Planned(plans []*Plan) error
	// Preview is told what the migration will do once the method is
	// known. When nothing is pending, or for a dry run, that is the end
	// of the run; otherwise an error (a confirmation declined) stops it
	// before anything is written.
	Preview(p Preview) error
	// Finished is told the outcome once every pending CRD was tried
	// (not when the run is cancelled).
	Finished(o Outcome) error
}

// Preview is what a migration will do, before anything is written.
type Preview struct {
	Plans []*Plan
	// Method is the method that runs (MethodMigrator or MethodRewrite),
	// Why says why (ResolveMethod).
	Method, Why string
	DryRun      bool
}

// Pending counts the CRDs the migration has anything to do for.
func (p Preview) Pending() int {
	n := 0
	for _, plan := range p.Plans {
		if plan.Pending() {
			n++
		}
	}
	return n
}

// Outcome is what a migration did, beyond its progress lines.
type Outcome struct {
	// Dropped are the managedFields entries dropped, not moved to the
	// storage version (fieldsets.go), sorted.
	Dropped []DroppedManagedFields
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
	// UI is shown the plan and asked before anything is written; it
	// receives the progress (Messages) and the outcome.
	UI UI

	// tune adjusts the migrator before it runs (tests shorten its waits).
	tune func(*Migrator)
}

// Run plans the migration of every CRD of req (nothing is written when
// any cannot be migrated), shows the plan to req.UI, which may stop it
// (a confirmation declined), then migrates the CRDs one after the other with the method req asks for
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
	if err := req.UI.Planned(plans); err != nil {
		return err
	}
	method, why, err := ResolveMethod(ctx, cluster, req.Method)
	if err != nil {
		return err
	}
	// Every object is rewritten through the CRD's conversion webhook:
	// what it refuses or loses is probed first, and nothing is written
	// when it would.
	if err := probeConversions(ctx, cluster, plans, kube.DefaultPageSize); err != nil {
		return err
	}
	preview := Preview{Plans: plans, Method: method, Why: why, DryRun: req.DryRun}
	if err := req.UI.Preview(preview); err != nil {
		return err
	}
	pending := preview.Pending()
	if pending == 0 || req.DryRun {
		return nil
	}

	m := &Migrator{
		method:          method,
		cluster:         cluster,
		msgs:            req.UI,
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
	sortDropped(m.dropped)
	if err := req.UI.Finished(Outcome{Dropped: m.dropped}); err != nil {
		failed = append(failed, err)
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

func joinSpace(s []string) string { return strings.Join(s, " ") }

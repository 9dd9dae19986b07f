package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Methods of --method.
const (
	MethodAuto     = "auto"
	MethodMigrator = "migrator"
	MethodRewrite  = "rewrite"
)

var migrationMethods = []string{MethodAuto, MethodMigrator, MethodRewrite}

const (
	// DefaultMigrationConcurrency bounds the object updates in flight per CRD.
	DefaultMigrationConcurrency = 8

	// maxWriteAttempts bounds the writes of one object (or of a CRD's
	// status) that keep conflicting with concurrent changes.
	maxWriteAttempts = 10
)

// ErrCRDChanged is returned when a CRD's spec changed while its objects
// were being rewritten: status.storedVersions is then left as it was.
var ErrCRDChanged = errors.New("crd changed during the migration")

// Migrator rewrites the objects of planned CRDs and trims their
// status.storedVersions.
type Migrator struct {
	method      string // MethodMigrator or MethodRewrite
	cluster     Cluster
	msgs        Messages
	concurrency int
	pageSize    int64

	storageWait     time.Duration // how long to wait for the storage version to take effect
	pollInterval    time.Duration // between discovery reads while waiting
	progressEvery   time.Duration // a progress line at least this often while objects are rewritten
	progressByCount int           // a progress line every total/progressByCount objects
	// migratorRetryWait: before another migration when the cluster's
	// migrator failed on a stale discovery cache.
	migratorRetryWait time.Duration

	// dropped collects the managedFields entries dropped, for the table
	// at the end of the run.
	dropped []DroppedManagedFields
}

// migrationCounts counts the objects of one CRD by outcome.
type migrationCounts struct {
	Rewritten int // written again at the storage version
	Current   int // already stored at the storage version: the apiserver wrote nothing
	Gone      int // deleted since they were listed
	Failed    int
	Managed   int // of the written: their managedFields moved to the storage version
	Dropped   int // of Managed: some of their entries dropped rather than moved (fieldsets.go)
}

func (c migrationCounts) Done() int { return c.Rewritten + c.Current + c.Gone + c.Failed }

func (c *migrationCounts) add(o migrationCounts) {
	c.Rewritten += o.Rewritten
	c.Current += o.Current
	c.Gone += o.Gone
	c.Failed += o.Failed
	c.Managed += o.Managed
	c.Dropped += o.Dropped
}

// migrate waits for the storage version to take effect (step 1 of both
// methods), then rewrites the objects and trims status.storedVersions
// itself (rewrite.go) or hands both to the cluster's migrator
// (storageversionmigration.go), having moved the managedFields of the
// objects to the storage version first (managedfields.go): the migrator
// trims status.storedVersions as soon as it is done, so that must be
// done before. A CRD whose status.storedVersions is trimmed already gets
// only the managedFields pass.
func (m *Migrator) migrate(ctx context.Context, p *Plan) (migrationCounts, error) {
	if err := m.waitForStorageVersion(ctx, p); err != nil {
		return migrationCounts{}, err
	}
	if err := m.waitForObservedGeneration(ctx, p); err != nil {
		return migrationCounts{}, err
	}
	if p.Unproven != nil {
		if err := m.restoreStoredVersions(ctx, p); err != nil {
			return migrationCounts{}, err
		}
	}
	if p.Done() {
		counts, err := m.managedFieldsPass(ctx, p, passManagedFields, "status.storedVersions is ["+p.Storage+"] already")
		return counts, err
	}
	if m.method == MethodMigrator {
		counts, err := m.managedFieldsPass(ctx, p, passManagedFields, "no StorageVersionMigration created, status.storedVersions left as ["+joinSpace(p.Stored)+"]")
		if err != nil {
			return counts, err
		}
		if err := m.migrateWithMigrator(ctx, p); err != nil {
			return counts, err
		}
		if err := m.writeRecord(ctx, p); err != nil {
			return counts, err
		}
		// Objects written at another version while the migration ran
		// (a client of a version still served) got entries at it again.
		after, err := m.managedFieldsPass(ctx, p, passManagedFieldsRecheck, "status.storedVersions is ["+p.Storage+"] (the migrator trimmed it)")
		counts.add(after)
		return counts, err
	}
	counts, err := m.rewriteObjects(ctx, p, passRewrite)
	if err != nil {
		return counts, err
	}
	return counts, m.trimStoredVersions(ctx, p)
}

// managedFieldsPass moves the managedFields of every object that names
// another version than the storage version; state says, on failure, what
// is left as it was.
func (m *Migrator) managedFieldsPass(ctx context.Context, p *Plan, ps pass, state string) (migrationCounts, error) {
	counts, err := m.rewriteObjects(ctx, p, ps)
	var failed *ObjectsFailedError
	if errors.As(err, &failed) {
		failed.State = state
	}
	return counts, err
}

// restoreStoredVersions undoes a trim of status.storedVersions that no
// evidence backs (p.Unproven: by hand): every version of the CRD is listed
// again (objects may be stored in any of them), so that the migration
// trims it as it always does, on its proof and under its own field
// manager. Adding versions never calls the webhook (examples/webhook).
func (m *Migrator) restoreStoredVersions(ctx context.Context, p *Plan) error {
	for attempt := 1; ; attempt++ {
		u, err := m.cluster.GetCRD(ctx, p.Name)
		if err != nil {
			return fmt.Errorf("crd %s: reading it to restore status.storedVersions: %w", p.Name, err)
		}
		if u.GetUID() != p.UID || u.GetGeneration() != p.Generation {
			return fmt.Errorf("crd %s: %w: its spec changed since the plan (generation %d -> %d); run the command again",
				p.Name, ErrCRDChanged, p.Generation, u.GetGeneration())
		}
		if err := unstructured.SetNestedStringSlice(u.Object, p.Versions, "status", "storedVersions"); err != nil {
			return fmt.Errorf("crd %s: setting status.storedVersions: %w", p.Name, err)
		}
		_, err = m.cluster.UpdateCRDStatus(ctx, u)
		if err == nil {
			m.msgs.Notify([]string{fmt.Sprintf("crd %s: status.storedVersions [%s] was trimmed by %s without evidence: restored to [%s] until every object is migrated",
				p.Name, joinSpace(p.Stored), p.Unproven.Manager, joinSpace(p.Versions))})
			p.Stored, p.Unproven = slices.Clone(p.Versions), nil
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == maxWriteAttempts {
			return fmt.Errorf("crd %s: restoring status.storedVersions to [%s]: %w", p.Name, joinSpace(p.Versions), err)
		}
	}
}

func (m *Migrator) waitForStorageVersion(ctx context.Context, p *Plan) error {
	want := StorageVersionHash(p.Group, p.Storage, p.Kind)
	deadline := time.Now().Add(m.storageWait)
	for {
		got, err := m.cluster.StorageVersionHash(ctx, p.gvr())
		if err == nil && (got == want || got == "") { // "": the server does not tell
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("crd %s: checking that the apiserver stores %s at %s: %w", p.Name, p.Plural, p.Storage, err)
			}
			return fmt.Errorf("crd %s: the apiserver still stores %s at a version other than %s after %s "+
				"(API discovery reports storageVersionHash %q, %s is %q): the storage version switch has not taken effect",
				p.Name, p.Plural, p.Storage, m.storageWait, got, p.Storage, want)
		}
		if err := sleep(ctx, m.pollInterval); err != nil {
			return err
		}
	}
}

// waitForObservedGeneration waits, after a storage version change, until the
// CRD's status.observedGeneration reaches its generation, where the cluster
// reports it (Kubernetes 1.36 and later): until then the apiserver may
// still serve the previous spec.
func (m *Migrator) waitForObservedGeneration(ctx context.Context, p *Plan) error {
	deadline := time.Now().Add(m.storageWait)
	for {
		crd, err := m.liveCRD(ctx, p)
		if err != nil {
			return err
		}
		if crd.Status.ObservedGeneration == 0 || crd.Status.ObservedGeneration >= crd.Generation {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("crd %s: status.observedGeneration is %d, its generation %d, after %s: the apiserver has not taken up the current spec",
				p.Name, crd.Status.ObservedGeneration, crd.Generation, m.storageWait)
		}
		if err := sleep(ctx, m.pollInterval); err != nil {
			return err
		}
	}
}

func (m *Migrator) liveCRD(ctx context.Context, p *Plan) (*apiextv1.CustomResourceDefinition, error) {
	u, err := m.cluster.GetCRD(ctx, p.Name)
	if err != nil {
		return nil, fmt.Errorf("crd %s: reading it: %w", p.Name, err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("decoding crd %s: %w", p.Name, err)
	}
	return crd, nil
}

// apiVersion is the group/version of the storage version.
func (p *Plan) apiVersion() string { return p.Group + "/" + p.Storage }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

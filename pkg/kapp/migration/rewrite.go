package migration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxReportedFailures bounds the objects named in an error; the first
// maxCollectedFailures failures are kept to choose them from (sorted).
const (
	maxReportedFailures  = 10
	maxCollectedFailures = 1000
)

// How one CRD is migrated by the client-side rewrite (--method rewrite),
// after kube-storage-version-migrator:
//
//  1. Wait until API discovery reports the storage version as the
//     resource's storageVersionHash: right after a deploy switched the
//     storage version, the apiserver may not have picked up the switch yet
//     and would still write the old version.
//  2. LIST every custom resource at the storage version, page by page, in
//     all namespaces, and write each back unchanged with an update that
//     carries its resourceVersion (at most `concurrency` at once). The
//     apiserver decodes the stored object, encodes the update at the
//     storage version and compares the bytes with what is stored: an
//     object already stored at the storage version encodes to the same
//     bytes, so the apiserver skips the write and the resourceVersion stays
//     (counted as "already at" the version); an object stored at another
//     version differs, at least in apiVersion, and is rewritten. A conflict
//     (the object changed since it was read) re-reads it and tries again;
//     an object deleted meanwhile needs nothing.
//  3. Only when every object was written: set status.storedVersions to the
//     storage version alone, through the status subresource, with the
//     resourceVersion of a fresh read, and only if the CRD's spec did not
//     change since the plan was made (its generation).
//
// Resumable by construction: an interrupted run leaves status.storedVersions
// as it was (so the check keeps blocking the version's removal), and a
// second run repeats steps 1-3. The objects the first run rewrote are no-op
// writes for the apiserver the second time, so the second run writes only
// the objects the first did not reach; no progress file is needed.

// pass is what rewriteObjects writes.
type pass int

const (
	// passRewrite writes every object back (step 2 of the rewrite), its
	// managedFields moved to the storage version where they name another.
	passRewrite pass = iota
	// passManagedFields writes only the objects whose managedFields name
	// another version, moving them (the migrator method, before and after
	// the cluster's migration, and a CRD whose status.storedVersions is
	// trimmed already). Such a write stores the object at the storage
	// version too.
	passManagedFields
	// passManagedFieldsRecheck is passManagedFields after the cluster's
	// migration, quiet unless it moves or fails something.
	passManagedFieldsRecheck
)

// rewriteObjects is step 2 (or a managedFields pass). Objects that fail do
// not stop the others; the error names the first of them (sorted) and how
// many failed, and wraps ErrObjectsFailed.
func (m *Migrator) rewriteObjects(ctx context.Context, p *Plan, ps pass) (migrationCounts, error) {
	objs := m.cluster.Objects(p.gvr())
	prog := m.newProgress(p, ps)
	var (
		mu       sync.Mutex
		failures []error
	)
	opts := metav1.ListOptions{Limit: m.pageSize}
	for {
		list, err := objs.List(ctx, opts)
		if err != nil {
			// A continue token outlives etcd's compaction (about 5 minutes)
			// on a long migration: go on from the same key at the latest
			// state, as the apiserver offers. Objects created since are
			// written at the storage version anyway.
			if token, ok := expiredListContinue(err); ok && opts.Continue != "" {
				opts.Continue = token
				continue
			}
			return prog.counts(), fmt.Errorf("crd %s: listing %s at %s: %w", p.Name, p.Plural, p.Storage, err)
		}
		items := list.Items
		// Failures are recorded per object, so the work itself never fails.
		_ = parallel.ForEach(ctx, len(items), m.concurrency, func(ctx context.Context, i int) error {
			res, err := rewriteObject(ctx, objs, &items[i], p.apiVersion(), p.ManagedFields, ps)
			if err != nil {
				mu.Lock()
				if len(failures) < maxCollectedFailures {
					failures = append(failures, err)
				}
				mu.Unlock()
			}
			prog.add(res, err)
			return nil
		})
		if err := ctx.Err(); err != nil {
			return prog.counts(), fmt.Errorf("crd %s: %w", p.Name, err)
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	prog.finish()
	m.reportDropped(p, prog.droppedEntries())

	counts := prog.counts()
	if counts.Failed == 0 {
		return counts, nil
	}
	sort.Slice(failures, func(i, j int) bool { return failures[i].Error() < failures[j].Error() })
	named := failures
	if len(named) > maxReportedFailures {
		named = named[:maxReportedFailures]
	}
	what := fmt.Sprintf("%d of %d %s could not be rewritten at %s", counts.Failed, counts.Done(),
		plural.Of(counts.Done(), "object", "objects"), p.Storage)
	if ps != passRewrite {
		what = fmt.Sprintf("the managedFields of %d of %d %s could not be moved to %s", counts.Failed, counts.Done(),
			plural.Of(counts.Done(), "object", "objects"), p.Storage)
	}
	if len(named) < len(failures) {
		what += fmt.Sprintf(" (the first %d named)", len(named))
	}
	return counts, &ObjectsFailedError{CRD: p.Name, Failed: counts.Failed, msg: what, errs: named,
		State: "status.storedVersions left as [" + joinSpace(p.Stored) + "]"}
}

// ErrObjectsFailed is wrapped by the error of a CRD some of whose objects
// could not be written: each is named with its cause, the others were
// written, status.storedVersions is left as it was, and a second run
// writes only what the first did not.
var ErrObjectsFailed = errors.New("objects could not be migrated")

// ObjectsFailedError names the objects of one CRD that could not be
// written (at most maxReportedFailures of them) with their causes; it
// unwraps to ErrObjectsFailed and to each cause.
type ObjectsFailedError struct {
	CRD    string
	Failed int
	// State says what the failure left undone, e.g. "status.storedVersions
	// left as [v1alpha1 v1]".
	State string
	msg   string
	errs  []error
}

func (e *ObjectsFailedError) Error() string {
	return fmt.Sprintf("crd %s: %s; %s (fix them and run the command again): %v",
		e.CRD, e.msg, e.State, errors.Join(e.errs...))
}

func (e *ObjectsFailedError) Unwrap() []error { return append([]error{ErrObjectsFailed}, e.errs...) }

// outcome is what rewriting one object came to.
type outcome int

const (
	outcomeRewritten outcome = iota
	outcomeCurrent
	outcomeGone
)

// objectResult is what rewriting one object came to, and whether its
// managedFields were moved to the storage version.
type objectResult struct {
	outcome outcome
	managed bool
	// dropped lists the managedFields entries dropped rather than moved
	// (fieldsets.go), when managed.
	dropped []droppedEntry
}

// errManagedFieldsKept: the apiserver's answer to a write that moved an
// object's managedFields still names another version.
var errManagedFieldsKept = errors.New("managedFields still name another version after the write")

// rewriteObject writes obj back with its resourceVersion (an optimistic
// lock: a concurrent change is a conflict, never overwritten), its
// managedFields moved to apiVersion. In passManagedFields an object whose
// managedFields name no other version is not written. On a conflict it
// re-reads the object and tries again.
func rewriteObject(ctx context.Context, c ObjectClient, obj *unstructured.Unstructured, apiVersion string, policy FieldSetPolicy, ps pass) (objectResult, error) {
	ns, name := obj.GetNamespace(), obj.GetName()
	verb := "rewriting"
	if ps != passRewrite {
		verb = "moving the managedFields of"
	}
	for attempt := 1; ; attempt++ {
		mv, err := migrateManagedFields(obj, apiVersion, policy)
		if err != nil {
			return objectResult{}, fmt.Errorf("%s %s: %w", verb, objectName(ns, name), err)
		}
		moved := mv.Changed
		if ps != passRewrite && !moved {
			return objectResult{outcome: outcomeCurrent}, nil
		}
		rv := obj.GetResourceVersion()
		updated, err := c.Update(ctx, obj)
		switch {
		case err == nil:
			if stale := staleManagedFields(updated, apiVersion); len(stale) > 0 {
				return objectResult{}, fmt.Errorf("%s %s: %w (%s)", verb, objectName(ns, name), errManagedFieldsKept, strings.Join(stale, ", "))
			}
			if updated.GetResourceVersion() == rv {
				return objectResult{outcome: outcomeCurrent}, nil
			}
			return objectResult{outcome: outcomeRewritten, managed: moved, dropped: mv.Dropped}, nil
		case apierrors.IsNotFound(err):
			return objectResult{outcome: outcomeGone}, nil
		case !apierrors.IsConflict(err):
			return objectResult{}, fmt.Errorf("%s %s: %w", verb, objectName(ns, name), err)
		case attempt == maxWriteAttempts:
			return objectResult{}, fmt.Errorf("%s %s: still conflicting after %d attempts: %w", verb, objectName(ns, name), attempt, err)
		}
		if obj, err = c.Get(ctx, ns, name); err != nil {
			if apierrors.IsNotFound(err) {
				return objectResult{outcome: outcomeGone}, nil
			}
			return objectResult{}, fmt.Errorf("re-reading %s after a conflict: %w", objectName(ns, name), err)
		}
	}
}

// writeRecord writes the migration's record on the CRD (before the trim
// of the rewrite, after the cluster's migrator trimmed): every object is
// stored at p.Storage as of generation p.Generation, the evidence the
// webhook and the check accept for a trim of status.storedVersions
// (pkg/kapp/internal/storedversions). A spec change since the plan stops
// it (ErrCRDChanged): the objects were proven at the planned spec only.
func (m *Migrator) writeRecord(ctx context.Context, p *Plan) error {
	rec := storedversions.Record{Version: p.Storage, Generation: p.Generation}
	for attempt := 1; ; attempt++ {
		u, err := m.cluster.GetCRD(ctx, p.Name)
		if err != nil {
			return fmt.Errorf("crd %s: reading it to record the migration: %w", p.Name, err)
		}
		if u.GetUID() != p.UID || u.GetGeneration() != p.Generation {
			return fmt.Errorf("crd %s: %w: its spec changed while objects were rewritten (generation %d -> %d, uid %s -> %s); "+
				"status.storedVersions left unchanged, run the command again", p.Name, ErrCRDChanged,
				p.Generation, u.GetGeneration(), p.UID, u.GetUID())
		}
		annotations := u.GetAnnotations()
		if got, ok := storedversions.RecordOf(annotations); ok && got == rec {
			return nil
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		maps.Copy(annotations, rec.Annotations())
		u.SetAnnotations(annotations)
		_, err = m.cluster.UpdateCRD(ctx, u)
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == maxWriteAttempts {
			return fmt.Errorf("crd %s: recording the migration (annotation %s: %s): %w", p.Name, storedversions.RecordVersionAnnotation, p.Storage, err)
		}
	}
}

// trimStoredVersions is step 3: the record, then the trim.
func (m *Migrator) trimStoredVersions(ctx context.Context, p *Plan) error {
	if err := m.writeRecord(ctx, p); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		u, err := m.cluster.GetCRD(ctx, p.Name)
		if err != nil {
			return fmt.Errorf("crd %s: reading it to trim status.storedVersions: %w", p.Name, err)
		}
		if u.GetUID() != p.UID || u.GetGeneration() != p.Generation {
			return fmt.Errorf("crd %s: %w: its spec changed while objects were rewritten (generation %d -> %d, uid %s -> %s); "+
				"status.storedVersions left unchanged, run the command again", p.Name, ErrCRDChanged,
				p.Generation, u.GetGeneration(), p.UID, u.GetUID())
		}
		want := []string{p.Storage}
		stored, _, _ := unstructured.NestedStringSlice(u.Object, "status", "storedVersions")
		if slices.Equal(stored, want) {
			return nil
		}
		// Never while the cluster's migrator works on the CRD: it sets
		// status.storedVersions itself when it is done.
		if running, msg := storageMigrating(u); running {
			return fmt.Errorf("crd %s: %w (%s): status.storedVersions left unchanged; run the command again once it is done",
				p.Name, errMigrationRunning, msg)
		}
		if err := unstructured.SetNestedStringSlice(u.Object, want, "status", "storedVersions"); err != nil {
			return fmt.Errorf("crd %s: setting status.storedVersions: %w", p.Name, err)
		}
		_, err = m.cluster.UpdateCRDStatus(ctx, u)
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == maxWriteAttempts {
			return fmt.Errorf("crd %s: setting status.storedVersions to [%s]: %w", p.Name, p.Storage, err)
		}
	}
}

// expiredListContinue returns the continue token that an "expired" (410)
// LIST error offers to go on inconsistently.
func expiredListContinue(err error) (string, bool) {
	var status apierrors.APIStatus
	if !apierrors.IsResourceExpired(err) || !errors.As(err, &status) {
		return "", false
	}
	token := status.Status().ListMeta.Continue
	return token, token != ""
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// ---------------------------------------------------------------- progress

// migrationProgress counts the objects of one CRD and prints a progress
// line through kapp's messages UI: about every tenth of the objects and at
// least every progressEvery, never one line per object.
type migrationProgress struct {
	mu       sync.Mutex
	msgs     Messages
	plan     *Plan
	pass     pass
	c        migrationCounts
	step     int // objects between count-driven lines
	next     int // done count of the next count-driven line
	every    time.Duration
	lastLine time.Time
	printed  int // done count of the last line
	// dropped counts, per entry dropped, the objects it was dropped from.
	dropped map[droppedEntry]int
}

func (m *Migrator) newProgress(p *Plan, ps pass) *migrationProgress {
	parts := max(m.progressByCount, 1)
	step := max((p.Objects+parts-1)/parts, 1)
	return &migrationProgress{msgs: m.msgs, plan: p, pass: ps, step: step, next: step, every: m.progressEvery,
		lastLine: time.Now(), printed: -1}
}

func (pr *migrationProgress) add(r objectResult, err error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	switch {
	case err != nil:
		pr.c.Failed++
	case r.outcome == outcomeRewritten:
		pr.c.Rewritten++
	case r.outcome == outcomeCurrent:
		pr.c.Current++
	case r.outcome == outcomeGone:
		pr.c.Gone++
	}
	if err == nil && r.managed {
		pr.c.Managed++
		if len(r.dropped) > 0 {
			pr.c.Dropped++
			if pr.dropped == nil {
				pr.dropped = map[droppedEntry]int{}
			}
			seen := map[droppedEntry]bool{}
			for _, d := range r.dropped {
				if !seen[d] {
					seen[d] = true
					pr.dropped[d]++
				}
			}
		}
	}
	done := pr.c.Done()
	byCount := done >= pr.next
	for pr.next <= done {
		pr.next += pr.step
	}
	if pr.pass == passManagedFieldsRecheck && pr.c.Rewritten+pr.c.Failed == 0 {
		return
	}
	if byCount || (pr.every > 0 && time.Since(pr.lastLine) >= pr.every) {
		pr.line()
	}
}

// finish prints the final line unless the last line said the same.
func (pr *migrationProgress) finish() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.pass == passManagedFieldsRecheck && pr.c.Rewritten+pr.c.Failed == 0 {
		return
	}
	if pr.printed != pr.c.Done() {
		pr.line()
	}
}

// droppedEntries returns the entries dropped, each with the number of
// objects it was dropped from, sorted.
func (pr *migrationProgress) droppedEntries() []DroppedManagedFields {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	out := make([]DroppedManagedFields, 0, len(pr.dropped))
	for d, n := range pr.dropped {
		out = append(out, DroppedManagedFields{CRD: pr.plan.Name, Manager: d.Manager, Operation: d.Operation,
			Subresource: d.Subresource, APIVersion: d.APIVersion, Storage: pr.plan.Storage, Reason: d.Reason, Objects: n})
	}
	sortDropped(out)
	return out
}

func (pr *migrationProgress) counts() migrationCounts {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.c
}

// line prints e.g. "crd widgets.example.com: 120/400 objects done (100
// rewritten, 20 already at v1)". The total is the count made before the
// run; objects created since may make done exceed it.
func (pr *migrationProgress) line() {
	done := pr.c.Done()
	what, counts := "objects done", pr.c.describe(pr.plan.Storage)
	if pr.pass != passRewrite {
		what, counts = "objects checked for managedFields at other versions", pr.c.describeManaged(pr.plan.Storage)
	}
	pr.msgs.Notify([]string{fmt.Sprintf("crd %s: %d/%d %s (%s)",
		pr.plan.Name, done, max(pr.plan.Objects, done), what, counts)})
	pr.printed = done
	pr.lastLine = time.Now()
}

// describe renders the counts, e.g. "100 rewritten, 20 already at v1;
// managedFields of 100 moved to v1".
func (c migrationCounts) describe(storage string) string {
	s := fmt.Sprintf("%d rewritten, %d already at %s", c.Rewritten, c.Current, storage)
	if c.Managed > 0 {
		s += fmt.Sprintf("; managedFields of %d moved to %s", c.Managed, storage)
		if c.Dropped > 0 {
			s += fmt.Sprintf(" (entries of %d dropped)", c.Dropped)
		}
	}
	if c.Gone > 0 {
		s += fmt.Sprintf(", %d deleted meanwhile", c.Gone)
	}
	if c.Failed > 0 {
		s += fmt.Sprintf(", %d failed", c.Failed)
	}
	return s
}

// describeManaged renders the counts of a managedFields pass, e.g.
// "managedFields of 3 moved to v1, 17 at v1 already".
func (c migrationCounts) describeManaged(storage string) string {
	s := fmt.Sprintf("managedFields of %d moved to %s", c.Rewritten, storage)
	if c.Dropped > 0 {
		s += fmt.Sprintf(" (entries of %d dropped)", c.Dropped)
	}
	s += fmt.Sprintf(", %d at %s already", c.Current, storage)
	if c.Gone > 0 {
		s += fmt.Sprintf(", %d deleted meanwhile", c.Gone)
	}
	if c.Failed > 0 {
		s += fmt.Sprintf(", %d failed", c.Failed)
	}
	return s
}

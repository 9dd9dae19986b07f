package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// How a CRD is migrated by the cluster's own storage version migrator
// (--method migrator; Kubernetes 1.37 and later, kube-controller-manager's
// migration runner, which needs the garbage collector running):
//
//  1. As for the rewrite: wait until the storage version took effect.
//  2. Create a StorageVersionMigration for the CRD's group and resource.
//     The controller marks the CRD StorageMigrating, rewrites every object
//     at the storage version, and, when the CRD's spec did not change
//     meanwhile, sets status.storedVersions to the storage version itself.
//  3. Follow the migration's conditions (Running, Succeeded, Failed) with
//     progress lines, then check that status.storedVersions was trimmed.
//  4. Delete the StorageVersionMigration, whatever happened: it is ours.
//
// The migration writes no object and no CRD status itself on this path.

// ErrMigrationFailed is returned when the cluster's storage version
// migrator reports a migration as failed.
var ErrMigrationFailed = errors.New("storage version migration failed")

// managedByLabel marks the StorageVersionMigrations this command creates.
const managedByLabel = "app.kubernetes.io/managed-by"

const managedBy = storedversions.CommandFieldManager

// MigrationFailedError is the error of a migration the cluster's storage
// version migrator reports as failed (its Failed condition). It unwraps to
// ErrMigrationFailed.
type MigrationFailedError struct {
	CRD, Migration string
	// Reason and Message are those of the migration's Failed condition.
	Reason, Message string
}

func (e *MigrationFailedError) Error() string {
	return fmt.Sprintf("crd %s: %s: StorageVersionMigration %s: %s: %s; status.storedVersions left as it was",
		e.CRD, ErrMigrationFailed, e.Migration, e.Reason, e.Message)
}

func (e *MigrationFailedError) Unwrap() error { return ErrMigrationFailed }

// migratorAttempts bounds the migrations created for one CRD: a migration
// the cluster's migrator reports Failed is deleted and created again
// rather than waited on. Seen with 1.37.2: right after a storage switch or
// a version unserved, the controller's RESTMapper (resynced about every 30
// seconds) still maps the resource to the old versions and the migration
// fails ("does not support discovery operations"); one created after the
// resync succeeds. Other failures (an object a webhook refuses) may pass
// on a later attempt too; when the last attempt fails, its error names the
// migration, its reason and its message.
const migratorAttempts = 3

// migrateWithMigrator runs steps 2-4 for one CRD, again (after
// migratorRetryWait, the controller's discovery resync) when the migration
// failed, at most migratorAttempts times.
func (m *Migrator) migrateWithMigrator(ctx context.Context, p *Plan) error {
	for attempt := 1; ; attempt++ {
		err := m.migrateOnce(ctx, p)
		var failed *MigrationFailedError
		if !errors.As(err, &failed) || attempt == migratorAttempts {
			return err
		}
		m.msgs.Notify([]string{fmt.Sprintf("crd %s: StorageVersionMigration %s failed (%s: %s); creating another in %s, after the migrator's discovery resync (attempt %d of %d)",
			p.Name, failed.Migration, failed.Reason, failed.Message, m.migratorRetryWait, attempt+1, migratorAttempts)})
		if err := sleep(ctx, m.migratorRetryWait); err != nil {
			return err
		}
	}
}

// migrateOnce creates one migration, follows it and deletes it.
func (m *Migrator) migrateOnce(ctx context.Context, p *Plan) (err error) {
	svm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": svmResource.GroupVersion().String(),
		"kind":       "StorageVersionMigration",
		"metadata": map[string]any{
			"generateName": migrationNamePrefix(p.Name),
			"labels":       map[string]any{managedByLabel: managedBy},
		},
		"spec": map[string]any{"resource": map[string]any{"group": p.Group, "resource": p.Plural}},
	}}
	created, err := m.cluster.Migrations().Create(ctx, svm)
	if err != nil {
		return fmt.Errorf("crd %s: creating a StorageVersionMigration: %w", p.Name, err)
	}
	name := created.GetName()
	defer func() {
		// Removed whatever happened, also when ctx was cancelled.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := m.cluster.Migrations().Delete(dctx, name); derr != nil {
			err = errors.Join(err, fmt.Errorf("crd %s: deleting StorageVersionMigration %s: %w", p.Name, name, derr))
		}
	}()
	m.msgs.Notify([]string{fmt.Sprintf("crd %s: StorageVersionMigration %s created; the cluster's migrator rewrites the objects", p.Name, name)})

	if err := m.followMigration(ctx, p, name); err != nil {
		var failed *MigrationFailedError
		if errors.As(err, &failed) {
			if rerr := m.undoTrimAfterFailure(ctx, p, name); rerr != nil {
				return errors.Join(err, rerr)
			}
		}
		return err
	}
	return m.waitForTrim(ctx, p, name)
}

// undoTrimAfterFailure is the second guard against the trim after a failed
// migration (trimguard.go): the command does not use the migrator of the
// versions known to trim, but a cluster may report a version that carries
// the bug all the same (a vendor's build). After a migration failed, it
// waits until the controller has ended the CRD's StorageMigrating
// condition (it trims in the same write), and lists again every version of
// the plan's status.storedVersions that is gone from it (adding versions
// never calls the webhook), saying so.
func (m *Migrator) undoTrimAfterFailure(ctx context.Context, p *Plan, name string) error {
	deadline := time.Now().Add(m.storageWait)
	for {
		crd, err := m.liveCRD(ctx, p)
		if err != nil {
			return err
		}
		cond := crdCondition(crd, apiextv1.StorageMigrating)
		if cond == nil || cond.Status != apiextv1.ConditionTrue || time.Now().After(deadline) {
			break
		}
		if err := sleep(ctx, m.pollInterval); err != nil {
			return err
		}
	}
	for attempt := 1; ; attempt++ {
		u, err := m.cluster.GetCRD(ctx, p.Name)
		if err != nil {
			return fmt.Errorf("crd %s: reading it after StorageVersionMigration %s failed: %w", p.Name, name, err)
		}
		stored, _, _ := unstructured.NestedStringSlice(u.Object, "status", "storedVersions")
		restored := slices.Clone(p.Stored)
		for _, v := range stored {
			if !slices.Contains(restored, v) {
				restored = append(restored, v)
			}
		}
		if len(restored) == len(stored) || u.GetUID() != p.UID {
			return nil
		}
		if err := unstructured.SetNestedStringSlice(u.Object, restored, "status", "storedVersions"); err != nil {
			return fmt.Errorf("crd %s: setting status.storedVersions: %w", p.Name, err)
		}
		_, err = m.cluster.UpdateCRDStatus(ctx, u)
		if err == nil {
			m.msgs.Notify([]string{fmt.Sprintf("crd %s: the cluster's migrator trimmed status.storedVersions to [%s] although StorageVersionMigration %s failed (%s): restored to [%s]",
				p.Name, joinSpace(stored), name, upstreamIssueTrimOnFailure, joinSpace(restored))})
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == maxWriteAttempts {
			return fmt.Errorf("crd %s: the cluster's migrator trimmed status.storedVersions to [%s] although StorageVersionMigration %s failed (%s); restoring [%s]: %w",
				p.Name, joinSpace(stored), name, upstreamIssueTrimOnFailure, joinSpace(restored), err)
		}
	}
}

// followMigration polls the migration until it succeeds or fails, with a
// progress line when its Running message changes, at most every
// progressEvery.
func (m *Migrator) followMigration(ctx context.Context, p *Plan, name string) error {
	start := time.Now()
	// The Running condition last printed (a typed value: a progress line
	// when it changes).
	lastLine, lastRunning, printed := time.Time{}, migrationCondition{}, false
	for {
		u, err := m.cluster.Migrations().Get(ctx, name)
		if err != nil {
			return fmt.Errorf("crd %s: reading StorageVersionMigration %s: %w", p.Name, name, err)
		}
		conds := migrationConditions(u)
		switch {
		case conds["Succeeded"].status == "True":
			m.msgs.Notify([]string{fmt.Sprintf("crd %s: StorageVersionMigration %s succeeded after %s",
				p.Name, name, time.Since(start).Round(time.Second))})
			return nil
		case conds["Failed"].status == "True":
			return &MigrationFailedError{CRD: p.Name, Migration: name, Reason: conds["Failed"].reason, Message: conds["Failed"].message}
		}
		msg := "waiting for the migrator to start"
		running := conds["Running"]
		if running.status == "True" {
			msg = "running"
			if running.message != "" {
				msg += ": " + running.message
			}
		}
		changed := !printed || running != lastRunning
		if changed || time.Since(lastLine) >= m.progressEvery {
			if changed || !lastLine.IsZero() {
				m.msgs.Notify([]string{fmt.Sprintf("crd %s: StorageVersionMigration %s %s (%s)", p.Name, name, msg,
					time.Since(start).Round(time.Second))})
			}
			lastLine, lastRunning, printed = time.Now(), running, true
		}
		if err := sleep(ctx, m.pollInterval); err != nil {
			return err
		}
	}
}

// waitForTrim checks that the migrator set status.storedVersions to the
// storage version alone, as it does once the migration succeeded and the
// CRD's spec did not change meanwhile (it says so in the CRD's
// StorageMigrating condition otherwise).
func (m *Migrator) waitForTrim(ctx context.Context, p *Plan, name string) error {
	deadline := time.Now().Add(m.storageWait)
	for {
		crd, err := m.liveCRD(ctx, p)
		if err != nil {
			return err
		}
		if slices.Equal(crd.Status.StoredVersions, []string{p.Storage}) {
			return nil
		}
		cond := crdCondition(crd, apiextv1.StorageMigrating)
		if cond != nil && cond.Status == apiextv1.ConditionFalse && cond.Reason != "" && cond.Reason != "MigrationSucceeded" {
			return fmt.Errorf("crd %s: StorageVersionMigration %s ended with condition StorageMigrating %s: %s; status.storedVersions is [%s]",
				p.Name, name, cond.Reason, cond.Message, joinSpace(crd.Status.StoredVersions))
		}
		if time.Now().After(deadline) {
			why := ""
			if cond != nil {
				why = fmt.Sprintf(" (condition StorageMigrating %s: %s)", cond.Reason, cond.Message)
			}
			return fmt.Errorf("crd %s: StorageVersionMigration %s succeeded, but status.storedVersions is still [%s] after %s%s; "+
				"run the command again (with --method rewrite to trim it without the migrator)",
				p.Name, name, joinSpace(crd.Status.StoredVersions), m.storageWait, why)
		}
		if err := sleep(ctx, m.pollInterval); err != nil {
			return err
		}
	}
}

// migrationNamePrefix is the generateName of a CRD's migration: its name,
// cut to leave room for the apiserver's random suffix.
func migrationNamePrefix(crd string) string {
	const maxPrefix = 253 - 6
	if len(crd)+1 > maxPrefix {
		crd = crd[:maxPrefix-1]
	}
	return crd + "-"
}

type migrationCondition struct{ status, reason, message string }

// migrationConditions reads status.conditions of a StorageVersionMigration
// by type.
func migrationConditions(u *unstructured.Unstructured) map[string]migrationCondition {
	out := map[string]migrationCondition{}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		out[str("type")] = migrationCondition{status: str("status"), reason: str("reason"), message: str("message")}
	}
	return out
}

// Package storedversions decides when a version may leave a CRD's
// status.storedVersions: only on current evidence that no object can still
// be stored in it (docs/migrate.md, "Evidence for the trim"). The webhook,
// the engine and the migrate command's plan share it: CurrentRecord,
// NamedMigration and MigrationSucceeded are the only judges of evidence
// (TrimEvidence for a trim in flight, UnprovenTrim after the fact).
//
// The evidence is one of:
//
//   - the record of `kapp tools crd-migrate-storage`: two annotations on
//     the CRD saying at which storage version, and at which generation of
//     the CRD, every object was proven rewritten (RecordVersionAnnotation,
//     RecordGenerationAnnotation). It counts only while the CRD is at that
//     generation and that storage version (CurrentRecord): a record of an
//     earlier spec says nothing of objects written since. A record without
//     a generation (an older format) counts as none;
//   - the cluster's storage version migrator (Kubernetes 1.37): the
//     StorageVersionMigration the CRD's StorageMigrating condition names,
//     set at the CRD's current generation, that succeeded (NamedMigration,
//     MigrationSucceeded). Any other migration, however recent, counts as
//     none.
package storedversions

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// RecordVersionAnnotation names the storage version every object of
	// the CRD was proven rewritten at. Not under the waiver prefix
	// crd-upgrade-safety.kapp.k14s.io/, which config.WaiverOf reserves.
	RecordVersionAnnotation = "migration.crd-upgrade-safety.kapp.k14s.io/storage-version"
	// RecordGenerationAnnotation is the CRD's metadata.generation at which
	// every object was proven rewritten at RecordVersionAnnotation.
	RecordGenerationAnnotation = "migration.crd-upgrade-safety.kapp.k14s.io/generation"

	// MigratorFieldManager is the field manager of the cluster's storage
	// version migrator (kube-controller-manager's migration-runner
	// controller, Kubernetes 1.37), which trims status.storedVersions only
	// after a migration succeeded with the CRD's spec unchanged.
	MigratorFieldManager = "migration-runner-controller"
	// CommandFieldManager is the field manager of the writes of
	// `kapp tools crd-migrate-storage`, whose trim of
	// status.storedVersions follows the proof (and its record).
	CommandFieldManager = "kapp-crd-migrate-storage"
)

// Record is the migrate command's record on a CRD.
type Record struct {
	Version    string
	Generation int64
}

// RecordOf reads the record from a CRD's annotations; ok is false when it
// has none, or one that does not parse.
func RecordOf(annotations map[string]string) (Record, bool) {
	v := annotations[RecordVersionAnnotation]
	g, err := strconv.ParseInt(annotations[RecordGenerationAnnotation], 10, 64)
	if v == "" || err != nil {
		return Record{}, false
	}
	return Record{Version: v, Generation: g}, true
}

// Annotations are the annotations that carry r.
func (r Record) Annotations() map[string]string {
	return map[string]string{
		RecordVersionAnnotation:    r.Version,
		RecordGenerationAnnotation: strconv.FormatInt(r.Generation, 10),
	}
}

// Removed returns the versions of before missing from after, in the order
// of before.
func Removed(before, after []string) []string {
	var out []string
	for _, v := range before {
		if !slices.Contains(after, v) {
			out = append(out, v)
		}
	}
	return out
}

// StorageVersion is the version of crd marked storage: true ("" when none).
func StorageVersion(crd *apiextv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// CurrentRecord returns the migrate command's record on crd when it is
// evidence now: of crd's current metadata.generation and of its current
// storage version. Every object was proven stored at that version at that
// generation, and the spec has not changed since (a storage switch bumps
// the generation), so no object can be stored in another version. ok is
// false when crd has no record, one without a generation (an older
// format), or one of another generation or storage version: a record of
// an earlier spec is stale.
func CurrentRecord(crd *apiextv1.CustomResourceDefinition) (Record, bool) {
	r, ok := RecordOf(crd.Annotations)
	if !ok || r.Generation != crd.Generation || r.Version != StorageVersion(crd) {
		return Record{}, false
	}
	return r, true
}

// Reasons and message of the StorageMigrating condition the cluster's
// storage version migrator sets on a CRD (kube-controller-manager's
// migration runner, k8s.io/kubernetes/pkg/controller/storageversionmigrator,
// v1.37.2: markAsActive and finishCRDMigration; a test compares them with
// its source).
const (
	// MigratorRunningReason: a migration of the CRD's resource runs; the
	// condition's message names it.
	MigratorRunningReason = "MigrationRunning"
	// MigratorSucceededReason and MigratorFailedReason end the condition
	// (status False), in the same write that sets status.storedVersions to
	// the storage version when the generation did not change meanwhile.
	MigratorSucceededReason = "MigrationSucceeded"
	MigratorFailedReason    = "MigrationFailed"

	// The message of the condition while a migration runs is
	// fmt.Sprintf("Migration %s is running", svm.Name).
	migratorRunningPrefix, migratorRunningSuffix = "Migration ", " is running"
)

// NamedMigration returns the name of the StorageVersionMigration the
// cluster's migrator marked old as migrating at its current generation:
// the StorageMigrating condition is True, reason MigrationRunning,
// observedGeneration = metadata.generation, and its message names the
// migration (the controller's only record of which migration it runs; the
// words are pinned to its source by a test). ok is false otherwise.
func NamedMigration(old *apiextv1.CustomResourceDefinition) (string, bool) {
	for _, c := range old.Status.Conditions {
		if c.Type != apiextv1.StorageMigrating || c.Status != apiextv1.ConditionTrue ||
			c.Reason != MigratorRunningReason || c.ObservedGeneration != old.Generation {
			continue
		}
		name, ok := strings.CutPrefix(c.Message, migratorRunningPrefix)
		if !ok {
			return "", false
		}
		name, ok = strings.CutSuffix(name, migratorRunningSuffix)
		if !ok || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return "", false
		}
		return name, true
	}
	return "", false
}

// MigrationSucceeded reports whether svms hold the StorageVersionMigration
// name, of group and resource, with its Succeeded condition True and its
// Failed condition not True.
func MigrationSucceeded(svms []unstructured.Unstructured, name, group, resource string) bool {
	for i := range svms {
		u := &svms[i]
		if u.GetName() != name {
			continue
		}
		g, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "group")
		r, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "resource")
		if g != group || r != resource {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		succeeded := false
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["status"] != "True" {
				continue
			}
			switch m["type"] {
			case "Failed":
				return false
			case "Succeeded":
				succeeded = true
			}
		}
		return succeeded
	}
	return false
}

// EvidenceKind says what backs a trim of status.storedVersions.
type EvidenceKind string

const (
	// EvidenceRecord: the migrate command's record, current.
	EvidenceRecord EvidenceKind = "record"
	// EvidenceMigration: the StorageVersionMigration the CRD's condition
	// names, succeeded.
	EvidenceMigration EvidenceKind = "migration"
)

// Evidence is what backs a trim of status.storedVersions.
type Evidence struct {
	Kind EvidenceKind
	// Record, for EvidenceRecord.
	Record Record
	// Migration is the StorageVersionMigration's name, for
	// EvidenceMigration; Version the storage version it migrated to.
	Migration, Version string
}

// MigrationsFunc lists the cluster's StorageVersionMigrations.
type MigrationsFunc func(ctx context.Context) ([]unstructured.Unstructured, error)

// TrimEvidence returns the evidence that backs setting the stored CRD
// old's status.storedVersions to after (the judgement of the webhook): a
// current record of the migrate command (CurrentRecord) whose version
// after keeps; or, when after is the storage version alone, the
// StorageVersionMigration old's condition names at its current generation
// (NamedMigration), succeeded, read through list (nil: the cluster offers
// no such evidence). ok is false when nothing backs it; an error means the
// migrations could not be read.
func TrimEvidence(ctx context.Context, old *apiextv1.CustomResourceDefinition, after []string, list MigrationsFunc) (Evidence, bool, error) {
	if r, ok := CurrentRecord(old); ok && slices.Contains(after, r.Version) {
		return Evidence{Kind: EvidenceRecord, Record: r, Version: r.Version}, true, nil
	}
	storage := StorageVersion(old)
	name, named := NamedMigration(old)
	if list == nil || !named || !slices.Equal(after, []string{storage}) {
		return Evidence{}, false, nil
	}
	svms, err := list(ctx)
	if err != nil {
		return Evidence{}, false, err
	}
	if !MigrationSucceeded(svms, name, old.Spec.Group, old.Spec.Names.Plural) {
		return Evidence{}, false, nil
	}
	return Evidence{Kind: EvidenceMigration, Migration: name, Version: storage}, true, nil
}

// migratorFailed reports whether crd's StorageMigrating condition says
// the cluster's migrator ended a migration that failed (status False,
// reason MigrationFailed): Kubernetes 1.37.0 to 1.37.2 trim
// status.storedVersions in that same write (kubernetes#143103), so their
// trim proves nothing.
func migratorFailed(crd *apiextv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextv1.StorageMigrating {
			return c.Status == apiextv1.ConditionFalse && c.Reason == MigratorFailedReason
		}
	}
	return false
}

// Trim is the last write of status.storedVersions through the status
// subresource, as the CRD's managedFields record it.
type Trim struct {
	Manager string
	Time    *metav1.Time
}

// UnprovenTrim returns the last write of crd's status.storedVersions
// through the status subresource when no evidence backs it: a trim by
// hand (kubectl patch --subresource=status) or by a tool that proves
// nothing. nil when status.storedVersions was never written through the
// subresource (the apiserver only adds versions to it), when the migrate
// command's record is current (CurrentRecord) and of a version still
// listed, or when the last write was the migrate command's (which trims
// only on its proof) or the cluster's migrator's after a migration that
// did not fail. A record of an earlier generation or storage version
// counts for nothing: a storage move since may have stored objects in a
// version trimmed by hand afterwards. The engine's check and the migrate
// command's plan both decide by it.
//
// Limits: managedFields keep the last owner only, so a trim followed by a
// storage switch (which the apiserver records as the spec writer's) is no
// longer seen; the record and the field manager are claims any writer of
// the CRD can make. The webhook (TrimEvidence) guards the trim itself.
func UnprovenTrim(crd *apiextv1.CustomResourceDefinition) *Trim {
	if r, ok := CurrentRecord(crd); ok && slices.Contains(crd.Status.StoredVersions, r.Version) {
		return nil
	}
	for _, e := range crd.ManagedFields {
		if e.Subresource != "status" || e.FieldsV1 == nil || !ownsStoredVersions(e.FieldsV1.GetRawBytes()) {
			continue
		}
		switch {
		case e.Manager == CommandFieldManager:
			return nil
		case e.Manager == MigratorFieldManager && !migratorFailed(crd):
			return nil
		}
		return &Trim{Manager: e.Manager, Time: e.Time}
	}
	return nil
}

// ownsStoredVersions reports whether a managedFields entry's fieldsV1 owns
// status.storedVersions (an atomic list: f:status.f:storedVersions).
func ownsStoredVersions(raw []byte) bool {
	var fields struct {
		Status map[string]json.RawMessage `json:"f:status"`
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return false
	}
	_, ok := fields.Status["f:storedVersions"]
	return ok
}

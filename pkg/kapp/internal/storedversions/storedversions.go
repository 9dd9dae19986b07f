// Package storedversions decides when a version may leave a CRD's
// status.storedVersions: only on evidence that no object can still be
// stored in it (docs/migrate.md, "Evidence for a trim"). The webhook, the
// engine and the migration share it.
//
// The evidence is one of:
//
//   - the record of `kapp tools crd-migrate-storage`: two annotations on
//     the CRD saying at which storage version, and at which generation of
//     the CRD, every object was proven rewritten (RecordVersionAnnotation,
//     RecordGenerationAnnotation);
//   - the cluster's storage version migrator (Kubernetes 1.37): a
//     StorageVersionMigration of the CRD's resource that succeeded after the
//     migrator marked the CRD StorageMigrating at its current generation
//     (MigratorStarted, MigrationSucceededSince).
package storedversions

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// RecordBacksTrim reports whether the record on the stored CRD old backs
// setting its status.storedVersions to after: the record is of old's
// storage version and generation (so no spec change since the objects were
// proven rewritten), and after keeps that version.
func RecordBacksTrim(old *apiextv1.CustomResourceDefinition, after []string) bool {
	r, ok := RecordOf(old.Annotations)
	return ok && r.Version == StorageVersion(old) && r.Generation == old.Generation && slices.Contains(after, r.Version)
}

// MigratorStarted returns when the cluster's storage version migrator
// marked old StorageMigrating at its current generation (condition
// StorageMigrating True, observedGeneration = generation): a migration at
// the current storage version runs. ok is false otherwise.
func MigratorStarted(old *apiextv1.CustomResourceDefinition) (time.Time, bool) {
	for _, c := range old.Status.Conditions {
		if c.Type == apiextv1.StorageMigrating && c.Status == apiextv1.ConditionTrue && c.ObservedGeneration == old.Generation {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// MigrationSucceededSince returns the name of a StorageVersionMigration of
// group and resource among svms whose Succeeded condition became True at
// or after since (timestamps have a resolution of one second), "" when
// none did.
func MigrationSucceededSince(svms []unstructured.Unstructured, group, resource string, since time.Time) string {
	since = since.Truncate(time.Second)
	for i := range svms {
		u := &svms[i]
		g, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "group")
		r, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "resource")
		if g != group || r != resource {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["type"] != "Succeeded" || m["status"] != "True" {
				continue
			}
			s, _ := m["lastTransitionTime"].(string)
			t, err := time.Parse(time.RFC3339, s)
			if err == nil && !t.Before(since) {
				return u.GetName()
			}
		}
	}
	return ""
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
// subresource (the apiserver only adds versions to it), when the cluster's
// migrator wrote it last, or when the migrate command's record is of a
// version still listed (the trim it made, or the state it proved).
//
// Limits: managedFields keep the last owner only, so a trim followed by a
// storage switch (which the apiserver records as the spec writer's) is no
// longer seen; the record and the field manager are claims any writer of
// the CRD can make. The webhook (RecordBacksTrim, MigratorStarted and
// MigrationSucceededSince) guards the trim itself.
func UnprovenTrim(crd *apiextv1.CustomResourceDefinition) *Trim {
	if r, ok := RecordOf(crd.Annotations); ok && slices.Contains(crd.Status.StoredVersions, r.Version) {
		return nil
	}
	for _, e := range crd.ManagedFields {
		if e.Subresource != "status" || e.FieldsV1 == nil || !ownsStoredVersions(e.FieldsV1.GetRawBytes()) {
			continue
		}
		if e.Manager == MigratorFieldManager || e.Manager == CommandFieldManager {
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

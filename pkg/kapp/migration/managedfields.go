package migration

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The managedFields of a custom resource record, per field manager, the
// apiVersion its fields were written at. Server-side apply converts the
// object to every one of those versions to find conflicts, and fails for
// good (`request to convert CR to an invalid group/version`) once one of
// them is gone from the CRD (kubernetes/kubernetes#111937). Updates, by
// contrast, silently reset the managedFields they cannot convert. Neither
// a rewrite of the object nor the cluster's storage version migrator
// touches them, so the migration moves them itself:
//
// Every entry whose apiVersion is not group/storage is moved to it where
// its field set means the same there (fieldsets.go: conversion None, or a
// version that declares the same fields), with its manager, operation,
// subresource, time and fields kept (the choice Flux's MigrateAPIVersion
// makes): the manager keeps ownership, so its next apply still removes the
// fields it stopped applying, and a change to its fields by another
// manager is still a conflict. Every other entry is dropped (the choice
// Cluster API makes for entries at unserved versions): it would claim
// paths that name other data at the storage version. Two Update entries of
// one manager that end up at the same version would be one manager to the
// apiserver (it keys Update entries by manager, operation, subresource and
// apiVersion, and keeps the last of duplicates), so they are merged into
// one: the union of their fields, the later time. An object all of whose
// entries are dropped keeps one placeholder entry (placeholderEntry): the
// apiserver ignores an update that empties managedFields, and when an
// object has none it gives every field to a "before-first-apply" manager
// at the next apply (whose changes of them then conflict). docs/migrate.md says what each choice does to ownership and
// conflicts.

// staleManagedFields returns the apiVersions of obj's managedFields
// entries other than apiVersion, sorted, without repeats.
func staleManagedFields(obj *unstructured.Unstructured, apiVersion string) []string {
	var stale []string
	for _, e := range obj.GetManagedFields() {
		if e.APIVersion != apiVersion && !slices.Contains(stale, e.APIVersion) {
			stale = append(stale, e.APIVersion)
		}
	}
	slices.Sort(stale)
	return stale
}

// droppedEntry is a managedFields entry dropped rather than moved.
type droppedEntry struct {
	Manager, Operation, Subresource, APIVersion string
	Reason                                      dropReason
}

// moveResult is what moving the managedFields of one object did.
type moveResult struct {
	Changed bool
	Dropped []droppedEntry
}

// migrateManagedFields moves the managedFields entries of obj to
// apiVersion, or drops them, as policy says (see above), and reports what
// it did. obj is changed only when the result's Changed is true and the
// error nil.
func migrateManagedFields(obj *unstructured.Unstructured, apiVersion string, policy FieldSetPolicy) (moveResult, error) {
	entries := obj.GetManagedFields()
	moved, res, err := moveManagedFields(entries, apiVersion, policy)
	if err != nil || !res.Changed {
		return moveResult{}, err
	}
	obj.SetManagedFields(moved)
	return res, nil
}

// placeholderFields is what the placeholder entry owns: the object's name,
// which no write changes.
const placeholderFields = `{"f:metadata":{"f:name":{}}}`

// placeholderEntry is the entry left on an object all of whose entries
// were dropped (after Cluster API's seeding of managedFields). It is an
// Apply entry: the apiserver strips metadata.name from the set of the
// writer of an update (kapp-crd-migrate-storage, operation Update), and
// would drop an Update entry of that identity as empty.
func placeholderEntry(apiVersion string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: apiVersion, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(placeholderFields)}
}

// moveManagedFields returns entries with every entry at apiVersion, or
// dropped where policy says its fields mean other data there, merging
// those that become one manager, in the order of their first occurrence.
func moveManagedFields(entries []metav1.ManagedFieldsEntry, apiVersion string, policy FieldSetPolicy) ([]metav1.ManagedFieldsEntry, moveResult, error) {
	var res moveResult
	out := make([]metav1.ManagedFieldsEntry, 0, len(entries))
	index := map[managerKey]int{} // position in out
	for _, e := range entries {
		if e.APIVersion != apiVersion {
			if keep, why := policy.keep(e.APIVersion); !keep {
				res.Dropped = append(res.Dropped, droppedEntry{Manager: e.Manager, Operation: string(e.Operation),
					Subresource: e.Subresource, APIVersion: e.APIVersion, Reason: why})
				res.Changed = true
				continue
			}
			e.APIVersion = apiVersion
			res.Changed = true
		}
		k := keyOf(e)
		i, dup := index[k]
		if !dup {
			index[k] = len(out)
			out = append(out, e)
			continue
		}
		merged, err := unionFields(out[i].FieldsV1, e.FieldsV1)
		if err != nil {
			return nil, moveResult{}, fmt.Errorf("merging the managedFields entries of manager %q (%s): %w", e.Manager, e.Operation, err)
		}
		out[i].FieldsV1 = merged
		if e.Time != nil && (out[i].Time == nil || out[i].Time.Before(e.Time)) {
			out[i].Time = e.Time
		}
	}
	if !res.Changed {
		return entries, res, nil
	}
	if len(out) == 0 {
		out = append(out, placeholderEntry(apiVersion))
	}
	return out, res, nil
}

// managerKey is what the apiserver tells managers apart by
// (fieldmanager's BuildManagerIdentifier): an Apply entry's apiVersion is
// not part of it.
type managerKey struct {
	manager, operation, subresource, apiVersion string
}

func keyOf(e metav1.ManagedFieldsEntry) managerKey {
	k := managerKey{manager: e.Manager, operation: string(e.Operation), subresource: e.Subresource}
	if e.Operation != metav1.ManagedFieldsOperationApply {
		k.apiVersion = e.APIVersion
	}
	return k
}

// unionFields returns the union of two FieldsV1 sets: their JSON trees
// ({"f:spec":{"f:color":{}}}, with "." for a node owned itself) merged.
func unionFields(a, b *metav1.FieldsV1) (*metav1.FieldsV1, error) {
	if a == nil || len(a.GetRawBytes()) == 0 {
		return b, nil
	}
	if b == nil || len(b.GetRawBytes()) == 0 {
		return a, nil
	}
	var ta, tb map[string]any
	if err := json.Unmarshal(a.GetRawBytes(), &ta); err != nil {
		return nil, fmt.Errorf("decoding fieldsV1: %w", err)
	}
	if err := json.Unmarshal(b.GetRawBytes(), &tb); err != nil {
		return nil, fmt.Errorf("decoding fieldsV1: %w", err)
	}
	raw, err := json.Marshal(unionTree(ta, tb))
	if err != nil {
		return nil, fmt.Errorf("encoding fieldsV1: %w", err)
	}
	return metav1.NewFieldsV1(string(raw)), nil
}

func unionTree(a, b map[string]any) map[string]any {
	for k, vb := range b {
		va, ok := a[k]
		if !ok {
			a[k] = vb
			continue
		}
		ma, okA := va.(map[string]any)
		mb, okB := vb.(map[string]any)
		if okA && okB {
			a[k] = unionTree(ma, mb)
		}
	}
	return a
}

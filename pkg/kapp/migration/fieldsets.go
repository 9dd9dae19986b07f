package migration

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Which managedFields entries may be moved to the storage version.
//
// An entry's fieldsV1 is a set of paths in the object as it reads at the
// entry's apiVersion. The apiserver never converts these sets: server-side
// apply converts the object to the entry's version and compares paths
// there. Relabelling an entry to another version keeps its paths, so it is
// right only where every path names the same data at both versions:
//
//   - conversion None: the apiserver's converter changes only apiVersion,
//     so the object's fields are the same at every version (a version's
//     schema may prune some, and an entry that names a path the object
//     lacks owns nothing). Every entry is moved, also one at a version the
//     CRD no longer lists.
//   - conversion Webhook: the webhook may rename, move or reshape any
//     field. An entry is moved only when its version's schema declares the
//     same fields as the storage version's (sameFields: the same property
//     names at the same places, the same types, list and map types, keys,
//     and unknown-field, int-or-string and embedded-resource markers; value
//     validations, defaults and documentation do not make a field set), on
//     the premise that a webhook between two versions of the same fields
//     maps each field to itself. Every other entry is dropped, as the
//     apiserver drops the entries it cannot convert on an update and
//     Cluster API drops those at versions no longer served: a relabelled
//     entry would claim paths that, at the storage version, name other data
//     (conflicts lost, fields its manager stops applying left behind, and
//     a reused name pruned by its next apply; TestRelabelledFieldSets shows
//     each with structured-merge-diff's own updater).

// dropReason says why an entry was dropped rather than moved.
type dropReason int

const (
	// dropFieldsDiffer: conversion Webhook, and the entry's version
	// declares other fields than the storage version.
	dropFieldsDiffer dropReason = iota + 1
	// dropUnknownVersion: conversion Webhook, and the CRD has no such
	// version (its fields are unknown).
	dropUnknownVersion
)

// FieldSetPolicy decides, per apiVersion of a managedFields entry, whether
// its field set means the same at the storage version (moved) or not
// (dropped). The zero value moves everything (conversion None).
type FieldSetPolicy struct {
	// Webhook: the CRD converts through a webhook; only the versions of
	// same move.
	Webhook bool
	Group   string
	// Same lists the versions whose schemas declare the fields of the
	// storage version (the storage version included), sorted.
	Same []string
	// Versions lists every version of the CRD.
	Versions []string
}

// fieldSetPolicyOf is the policy of crd, whose storage version is storage.
func fieldSetPolicyOf(crd *apiextv1.CustomResourceDefinition, storage string) FieldSetPolicy {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextv1.WebhookConverter {
		return FieldSetPolicy{}
	}
	p := FieldSetPolicy{Webhook: true, Group: crd.Spec.Group}
	var storageSchema *apiextv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == storage && v.Schema != nil {
			storageSchema = v.Schema.OpenAPIV3Schema
		}
	}
	for _, v := range crd.Spec.Versions {
		p.Versions = append(p.Versions, v.Name)
		var s *apiextv1.JSONSchemaProps
		if v.Schema != nil {
			s = v.Schema.OpenAPIV3Schema
		}
		if v.Name == storage || sameFields(s, storageSchema, true) {
			p.Same = append(p.Same, v.Name)
		}
	}
	slices.Sort(p.Same)
	slices.Sort(p.Versions)
	return p
}

// keep reports whether an entry at apiVersion moves to the storage
// version, and why not.
func (p FieldSetPolicy) keep(apiVersion string) (bool, dropReason) {
	if !p.Webhook {
		return true, 0
	}
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok || group != p.Group || !slices.Contains(p.Versions, version) {
		return false, dropUnknownVersion
	}
	if slices.Contains(p.Same, version) {
		return true, 0
	}
	return false, dropFieldsDiffer
}

// sameFields reports whether two structural schemas declare the same
// field set (see above). At the root, apiVersion, kind and metadata are
// the apiserver's own (ObjectMeta whatever the schema says) and not
// compared.
func sameFields(a, b *apiextv1.JSONSchemaProps, root bool) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.Type != b.Type ||
		isTrue(a.XPreserveUnknownFields) != isTrue(b.XPreserveUnknownFields) ||
		a.XEmbeddedResource != b.XEmbeddedResource ||
		a.XIntOrString != b.XIntOrString ||
		listType(a) != listType(b) ||
		!slices.Equal(a.XListMapKeys, b.XListMapKeys) ||
		mapType(a) != mapType(b) {
		return false
	}
	if !sameProperties(a.Properties, b.Properties, root) {
		return false
	}
	var ai, bi *apiextv1.JSONSchemaProps
	if a.Items != nil {
		ai = a.Items.Schema
	}
	if b.Items != nil {
		bi = b.Items.Schema
	}
	if !sameFields(ai, bi, false) {
		return false
	}
	aa, ab := a.AdditionalProperties, b.AdditionalProperties
	if (aa == nil) != (ab == nil) {
		return false
	}
	if aa != nil && (aa.Allows != ab.Allows || !sameFields(aa.Schema, ab.Schema, false)) {
		return false
	}
	return true
}

func sameProperties(a, b map[string]apiextv1.JSONSchemaProps, root bool) bool {
	count := func(m map[string]apiextv1.JSONSchemaProps) int {
		n := 0
		for k := range m {
			if !root || !apiserverOwned(k) {
				n++
			}
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for k, pa := range a {
		if root && apiserverOwned(k) {
			continue
		}
		pb, ok := b[k]
		if !ok || !sameFields(&pa, &pb, false) {
			return false
		}
	}
	return true
}

func apiserverOwned(rootProperty string) bool {
	return rootProperty == "apiVersion" || rootProperty == "kind" || rootProperty == "metadata"
}

func isTrue(b *bool) bool { return b != nil && *b }

// listType is a list's x-kubernetes-list-type, atomic when absent.
func listType(s *apiextv1.JSONSchemaProps) string {
	if s.Type != "array" {
		return ""
	}
	if s.XListType == nil {
		return "atomic"
	}
	return *s.XListType
}

// mapType is an object's x-kubernetes-map-type, granular when absent.
func mapType(s *apiextv1.JSONSchemaProps) string {
	if s.Type != "object" {
		return ""
	}
	if s.XMapType == nil {
		return "granular"
	}
	return *s.XMapType
}

// DroppedManagedFields is a managedFields entry (a manager, operation,
// subresource and apiVersion) dropped from the objects of a CRD rather
// than moved to its storage version, and why.
type DroppedManagedFields struct {
	CRD                                         string
	Manager, Operation, Subresource, APIVersion string
	Storage                                     string // the storage version the entry was not moved to
	Reason                                      dropReason
	Objects                                     int // objects it was dropped from
}

func sortDropped(d []DroppedManagedFields) {
	slices.SortFunc(d, func(a, b DroppedManagedFields) int {
		return cmp.Or(strings.Compare(a.CRD, b.CRD), strings.Compare(a.Manager, b.Manager),
			strings.Compare(a.Operation, b.Operation), strings.Compare(a.Subresource, b.Subresource),
			strings.Compare(a.APIVersion, b.APIVersion))
	})
}

// Why says why the entry was dropped, e.g. "conversion Webhook, and
// v1alpha1 declares other fields than v1".
func (d DroppedManagedFields) Why() string {
	version := d.APIVersion
	if _, v, ok := strings.Cut(d.APIVersion, "/"); ok {
		version = v
	}
	switch d.Reason {
	case dropUnknownVersion:
		return fmt.Sprintf("conversion Webhook, and the CRD has no version %s", version)
	default:
		return fmt.Sprintf("conversion Webhook, and %s declares other fields than %s", version, d.Storage)
	}
}

// entry names the entry, e.g. "flux (Apply at example.com/v1alpha1)".
func (d DroppedManagedFields) entry() string {
	s := d.Manager + " (" + d.Operation
	if d.Subresource != "" {
		s += " of " + d.Subresource
	}
	return s + " at " + d.APIVersion + ")"
}

// reportDropped says which managers lost their entries on the objects of
// p, and keeps them for the table at the end of the run.
func (m *Migrator) reportDropped(p *Plan, dropped []DroppedManagedFields) {
	if len(dropped) == 0 {
		return
	}
	m.dropped = append(m.dropped, dropped...)
	parts := make([]string, len(dropped))
	for i, d := range dropped {
		parts[i] = fmt.Sprintf("%s on %s (%s)", d.entry(), plural.Count(d.Objects, "object", "objects"), d.Why())
	}
	m.msgs.Notify([]string{fmt.Sprintf("crd %s: managedFields entries dropped, not moved to %s (their fields name other data there; "+
		"each manager owns nothing until its next apply or update): %s", p.Name, p.Storage, strings.Join(parts, "; "))})
}

// droppedVersions lists the versions of the CRD whose entries are dropped,
// sorted.
func (p FieldSetPolicy) droppedVersions() []string {
	var out []string
	for _, v := range p.Versions {
		if !slices.Contains(p.Same, v) {
			out = append(out, v)
		}
	}
	return out
}

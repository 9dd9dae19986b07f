package checks

import (
	"slices"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of storagePruning: fields a served version keeps that the storage version prunes.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckStoragePruning}, Runs: finding.RunsOnCRD, Remedy: finding.RemedyStoreEveryField})

// checkStoragePruning: under conversion None the apiserver keeps one
// object, in the storage version, and serves it under every served version
// by changing only its apiVersion; on the way it prunes it by each schema
// (a write: by the request's version, then by the storage version's; a
// read: the other way round). So, for each served version V of the new CRD
// and its storage version S:
//
//   - a property V declares and S does not is pruned from every write
//     through V: its data is lost at once (always reported: Strict);
//   - a property S declares and V does not is missing from V's view: a
//     client that reads, modifies and writes the object through V (an
//     update, a server-side apply by a manager at V) drops it: reported
//     under readModifyWriteEnforcement (Warn by default).
//
// Only what the old CRD did not already lose the same way (the same field
// through the same served version, written or read, whichever version
// stored it: a new storage version that lacks a field the old storage
// version lacked too loses nothing an object held) is reported: the
// update's doing. Skipped under a
// conversion webhook (which may carry any field across) and for a CRD that
// sets spec.preserveUnknownFields (nothing is pruned).
func checkStoragePruning(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) {
	c := p.Settings.Checks.CRD.StoragePruning
	if !c.Enabled {
		return
	}
	before := map[string]bool{}
	for _, l := range storageLosses(old) {
		before[l.key()] = true
	}
	for _, l := range storageLosses(new) {
		if before[l.key()] {
			continue
		}
		if l.written {
			p.Add(finding.Draft{Version: l.version, Field: l.field, Check: config.CheckStoragePruning, Level: config.EnforcementStrict,
				DataLoss: true, Remedy: &finding.Remedy{Action: finding.RemedyStoreEveryField, Version: l.storage},
				Fact: finding.Change{Kind: "prunedOnWrite", Old: l.storage},
				Message: "pruned from every write through " + l.version + ": the storage version " + l.storage +
					" does not declare it (conversion None)"})
			continue
		}
		if c.ReadModifyWriteEnforcement.Reports() {
			p.Add(finding.Draft{Version: l.version, Field: l.field, Check: config.CheckStoragePruning, Level: c.ReadModifyWriteEnforcement,
				DataLoss: true, Remedy: &finding.Remedy{Action: finding.RemedyStoreEveryField, Version: l.storage},
				Fact: finding.Change{Kind: "missingFromView", Old: l.storage},
				Message: "missing from " + l.version + "'s view: the storage version " + l.storage +
					" holds it, a read-modify-write through " + l.version + " drops it (conversion None)"})
		}
	}
}

// storageLoss is a field one served version of a CRD loses to its storage
// version: written (declared by version, pruned when stored) or not
// (declared by the storage version, pruned from version's view).
type storageLoss struct {
	version, storage string
	field            schemapath.Path
	written          bool
}

// key identifies a loss by what is lost, not by the storage version that
// loses it: a field pruned from every write through a version was never
// stored, whichever version the old CRD stored objects in.
func (l storageLoss) key() string {
	w := "r"
	if l.written {
		w = "w"
	}
	return l.version + "\x00" + string(l.field) + "\x00" + w
}

// storageLosses lists what each served version of crd loses to its storage
// version under conversion None, served versions in spec order, fields in
// schema order.
func storageLosses(crd *apiextv1.CustomResourceDefinition) []storageLoss {
	if crd == nil || crd.Spec.PreserveUnknownFields || hasWebhookConversion(crd) {
		return nil
	}
	var storage *apiextv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Storage {
			storage = &crd.Spec.Versions[i]
		}
	}
	if storage == nil || VersionSchema(storage) == nil {
		return nil
	}
	var out []storageLoss
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served || v.Name == storage.Name || VersionSchema(v) == nil {
			continue
		}
		for _, f := range PrunedFields(VersionSchema(v), VersionSchema(storage)) {
			out = append(out, storageLoss{version: v.Name, storage: storage.Name, field: f, written: true})
		}
		for _, f := range PrunedFields(VersionSchema(storage), VersionSchema(v)) {
			out = append(out, storageLoss{version: v.Name, storage: storage.Name, field: f})
		}
	}
	return out
}

// PrunedFields returns the fields an object valid under schema from may hold
// that structural pruning under schema to removes: properties from declares
// and to does not (where to neither keeps unknown fields nor holds the
// entries as a map), and whatever from keeps as unknown fields where to
// prunes them (the path of the object, "unknown fields"). The root's
// apiVersion, kind and metadata, and an embedded resource's, are never
// pruned. Properties are visited in sorted order.
func PrunedFields(from, to *apiextv1.JSONSchemaProps) []schemapath.Path {
	var out []schemapath.Path
	prunedFields(from, to, schemapath.Root, true, &out)
	return out
}

func prunedFields(from, to *apiextv1.JSONSchemaProps, at schemapath.Path, resource bool, out *[]schemapath.Path) {
	if from == nil || to == nil || IsTrue(to.XPreserveUnknownFields) {
		return
	}
	resource = resource || to.XEmbeddedResource
	names := make([]string, 0, len(from.Properties))
	for name := range from.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if resource && (name == "apiVersion" || name == "kind" || name == "metadata") {
			continue
		}
		fp := from.Properties[name]
		tp, ok := to.Properties[name]
		switch {
		case ok:
			prunedFields(&fp, &tp, at.Child(name), false, out)
		case to.AdditionalProperties != nil && (to.AdditionalProperties.Allows || to.AdditionalProperties.Schema != nil):
			prunedFields(&fp, to.AdditionalProperties.Schema, at.Child(name), false, out)
		default:
			*out = append(*out, at.Child(name))
		}
	}
	if to.AdditionalProperties == nil {
		switch {
		case IsTrue(from.XPreserveUnknownFields):
			// Unknown fields from keeps, to prunes.
			*out = append(*out, at)
		case from.AdditionalProperties != nil && (from.AdditionalProperties.Allows || from.AdditionalProperties.Schema != nil):
			// Map entries from holds, to prunes but for the names it declares.
			*out = append(*out, at.Values())
		}
	}
	if from.Items != nil && to.Items != nil {
		prunedFields(from.Items.Schema, to.Items.Schema, at.Items(), false, out)
	}
	if from.AdditionalProperties != nil && to.AdditionalProperties != nil {
		prunedFields(from.AdditionalProperties.Schema, to.AdditionalProperties.Schema, at.Values(), false, out)
	}
}

package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of embeddedResource: x-kubernetes-embedded-resource added (compareNode runs it first).
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckEmbeddedResource}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns})

// checkEmbeddedResource: x-kubernetes-embedded-resource makes an object a
// resource of its own. The apiserver then requires apiVersion and kind
// (objectmeta.Validate), validates metadata as ObjectMeta, and keeps
// apiVersion, kind and metadata whatever the schema declares (pruning
// skips them).
//
//   - Added: stored objects without apiVersion or kind, or with invalid
//     metadata, become invalid.
//   - Removed: apiVersion, kind and metadata are then ordinary fields:
//     pruned unless declared or kept as unknown fields. It relaxes when the
//     new schema keeps unknown fields and declares none of the three (they
//     are kept as they are, whatever they hold); otherwise the stored
//     values are pruned or held to the declared schemas, which is
//     reported.
//
// It runs before walkProperties, which clears the declared properties.
func checkEmbeddedResource(n *node) {
	o, nw := n.old.XEmbeddedResource, n.new.XEmbeddedResource
	n.old.XEmbeddedResource, n.new.XEmbeddedResource = false, false
	if o == nw || !n.run.vc.ToggleEnabled(config.CheckEmbeddedResource) {
		return
	}
	if nw {
		n.report(config.CheckEmbeddedResource, finding.Change{Kind: "added", Old: "false", New: "true"},
			"x-kubernetes-embedded-resource added: stored objects without apiVersion or kind, or with invalid metadata, become invalid")
		return
	}
	_, apiVersion := n.new.Properties["apiVersion"]
	_, kind := n.new.Properties["kind"]
	_, metadata := n.new.Properties["metadata"]
	if IsTrue(n.new.XPreserveUnknownFields) && !apiVersion && !kind && !metadata {
		return
	}
	n.report(config.CheckEmbeddedResource, finding.Change{Kind: "removed", Old: "true", New: "false"},
		"x-kubernetes-embedded-resource removed: apiVersion, kind and metadata of stored objects are no longer kept as they are (pruned, or held to the declared schemas)")
}

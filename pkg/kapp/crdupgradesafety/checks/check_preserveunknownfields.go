package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of preserveUnknownFields: unknown fields no longer kept; before type: it reads the new type.
var _ = propertyCheckOf(21, finding.Register(finding.Descriptor{IDs: []string{config.CheckPreserveUnknownFields}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyKeepUnknownFields, Loss: finding.LossWhereStored, Unaffected: finding.UnaffectedWarns}), checkPreserveUnknownFields)

// checkPreserveUnknownFields: removing x-kubernetes-preserve-unknown-fields:
// true makes the apiserver prune the unknown fields stored objects hold.
// Adding it relaxes. Only objects are pruned: where the new schema holds a
// scalar, an array or an int-or-string, the type check judges the change.
// It runs before checkType, which clears the type.
func checkPreserveUnknownFields(n *node) {
	o, nw := n.old.XPreserveUnknownFields, n.new.XPreserveUnknownFields
	n.old.XPreserveUnknownFields, n.new.XPreserveUnknownFields = nil, nil
	holdsObjects := (n.new.Type == "" || n.new.Type == "object") && !n.new.XIntOrString
	if IsTrue(o) && !IsTrue(nw) && holdsObjects && n.run.vc.ToggleEnabled(config.CheckPreserveUnknownFields) {
		n.report(config.CheckPreserveUnknownFields, finding.Change{Kind: "removed", Old: "true"}, "x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned")
	}
}

// checkCRDPreserveUnknownFields: the CRD-level spec.preserveUnknownFields
// true -> false starts pruning everywhere: every field no schema declares
// (at any level not marked x-kubernetes-preserve-unknown-fields) is dropped
// from stored objects. Reported once per CRD at field ^, under the
// preserveUnknownFields ID, switched by
// checks.sameVersion.preserveUnknownFields like the keyword.
func checkCRDPreserveUnknownFields(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) {
	vc := &p.Settings.Checks.SameVersion
	if !old.Spec.PreserveUnknownFields || new.Spec.PreserveUnknownFields || !vc.Enabled ||
		!vc.ToggleEnabled(config.CheckPreserveUnknownFields) {
		return
	}
	p.Add(finding.Draft{Field: schemapath.Root, Check: config.CheckPreserveUnknownFields, Level: config.EnforcementStrict,
		Fact:    finding.Change{Kind: "specPreserveUnknownFields", Old: "true", New: "false"},
		Message: "spec.preserveUnknownFields: true -> false: pruning starts, unknown fields of existing objects would be dropped"})
}

func IsTrue(b *bool) bool { return b != nil && *b }

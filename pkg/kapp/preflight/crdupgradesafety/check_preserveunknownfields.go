package crdupgradesafety

import "github.com/crdsafety/kapp/pkg/kapp/config"

// checkPreserveUnknownFields: removing x-kubernetes-preserve-unknown-fields:
// true makes the apiserver prune the unknown fields stored objects hold.
// Adding it relaxes.
func checkPreserveUnknownFields(n *node) {
	o, nw := n.old.XPreserveUnknownFields, n.new.XPreserveUnknownFields
	n.old.XPreserveUnknownFields, n.new.XPreserveUnknownFields = nil, nil
	if isTrue(o) && !isTrue(nw) && n.run.vc.ToggleEnabled(config.CheckPreserveUnknownFields) {
		n.report(config.CheckPreserveUnknownFields, "x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned")
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of type: a property's type changed.
var _ = propertyCheckOf(30, finding.Register(finding.Descriptor{IDs: []string{config.CheckType}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyNewVersion, Unaffected: finding.UnaffectedWarns}), checkType)

// checkType: a property's type may not change, nor be set where the old
// schema had none (an untyped, preserve-unknown-fields value accepted any).
// Dropping the type (to an untyped value) relaxes. A reported type change
// also covers stored nulls (which a non-nullable new type drops): it owns
// nullable then, so that checkNullable does not report the same values
// again.
func checkType(n *node) {
	o, nw := n.old.Type, n.new.Type
	n.old.Type, n.new.Type = "", ""
	c := n.run.vc.Type
	if !c.Enabled || o == nw || nw == "" {
		return
	}
	if c.ChangeEnforcement.Reports() {
		n.old.Nullable, n.new.Nullable = false, false
	}
	n.reportAt(c.ChangeEnforcement, config.CheckType, finding.Change{Kind: "changed", Old: o, New: nw}, "type changed: %s -> %s", finding.RenderString(o), finding.RenderString(nw))
}

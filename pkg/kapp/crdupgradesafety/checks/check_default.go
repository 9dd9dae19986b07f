package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of default: a default added, changed or removed.
var _ = propertyCheckOf(42, finding.Register(finding.Descriptor{IDs: []string{config.CheckDefault}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyKeepDefault, Unaffected: finding.UnaffectedWarns}), checkDefault)

// checkDefault: a default added, changed or removed changes what clients and
// stored objects read back; each is configurable separately.
func checkDefault(n *node) {
	o, nw := n.old.Default, n.new.Default
	n.old.Default, n.new.Default = nil, nil
	c := n.run.vc.Default
	if !c.Enabled || finding.SameJSON(o, nw) {
		return
	}
	switch {
	case o == nil:
		n.reportAt(c.AdditionEnforcement, config.CheckDefault, finding.Change{Kind: "added", New: finding.FactValue(nw)}, "default added: (none) -> %s", finding.RenderJSON(nw))
	case nw == nil:
		n.reportAt(c.RemovalEnforcement, config.CheckDefault, finding.Change{Kind: "removed", Old: finding.FactValue(o)}, "default removed: %s -> (none)", finding.RenderJSON(o))
	default:
		n.reportAt(c.ChangeEnforcement, config.CheckDefault, finding.Change{Kind: "changed", Old: finding.FactValue(o), New: finding.FactValue(nw)}, "default changed: %s -> %s", finding.RenderJSON(o), finding.RenderJSON(nw))
	}
}

package crdupgradesafety

import "github.com/crdsafety/kapp/pkg/kapp/config"

// checkDefault: a default added, changed or removed changes what clients and
// stored objects read back; each is configurable separately.
func checkDefault(n *node) {
	o, nw := n.old.Default, n.new.Default
	n.old.Default, n.new.Default = nil, nil
	c := n.run.vc.Default
	if !c.Enabled || sameJSON(o, nw) {
		return
	}
	switch {
	case o == nil:
		n.reportAt(c.AdditionEnforcement, config.CheckDefault, Change{Kind: "added", New: factValue(nw)}, "default added: (none) -> %s", renderJSON(nw))
	case nw == nil:
		n.reportAt(c.RemovalEnforcement, config.CheckDefault, Change{Kind: "removed", Old: factValue(o)}, "default removed: %s -> (none)", renderJSON(o))
	default:
		n.reportAt(c.ChangeEnforcement, config.CheckDefault, Change{Kind: "changed", Old: factValue(o), New: factValue(nw)}, "default changed: %s -> %s", renderJSON(o), renderJSON(nw))
	}
}

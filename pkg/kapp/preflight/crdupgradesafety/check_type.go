package crdupgradesafety

import "github.com/crdsafety/kapp/pkg/kapp/config"

// checkType: a property's type may not change, nor be set where the old
// schema had none (an untyped, preserve-unknown-fields value accepted any).
// Dropping the type (to an untyped value) relaxes.
func checkType(n *node) {
	o, nw := n.old.Type, n.new.Type
	n.old.Type, n.new.Type = "", ""
	c := n.run.vc.Type
	if !c.Enabled || o == nw || nw == "" {
		return
	}
	n.reportAt(c.ChangeEnforcement, config.CheckType, "type changed: %s -> %s", renderString(o), renderString(nw))
}

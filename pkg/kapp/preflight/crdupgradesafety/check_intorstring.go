package crdupgradesafety

import "github.com/crdsafety/kapp/pkg/kapp/config"

// checkIntOrString: removing x-kubernetes-int-or-string rejects the values
// of the kind no longer allowed. Adding it to an integer or string field
// relaxes. It owns the type keyword in both cases, so checkType does not
// report the same change again.
func checkIntOrString(n *node) {
	o, nw := n.old.XIntOrString, n.new.XIntOrString
	n.old.XIntOrString, n.new.XIntOrString = false, false
	switch {
	case o && !nw:
		if n.run.vc.ToggleEnabled(config.CheckIntOrString) {
			n.report(config.CheckIntOrString, "x-kubernetes-int-or-string removed: int-or-string -> %s", describeType(n.new))
		}
		n.old.Type, n.new.Type = "", ""
	case !o && nw:
		if n.old.Type == "integer" || n.old.Type == "string" || n.old.Type == "" {
			n.old.Type, n.new.Type = "", ""
		}
	}
}

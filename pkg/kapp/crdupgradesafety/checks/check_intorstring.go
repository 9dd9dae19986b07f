package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of intOrString: x-kubernetes-int-or-string removed; before type: it owns type changes to and from int-or-string.
var _ = propertyCheckOf(22, finding.Register(finding.Descriptor{IDs: []string{config.CheckIntOrString}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyNewVersion, Unaffected: finding.UnaffectedWarns}), checkIntOrString)

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
			n.report(config.CheckIntOrString, finding.Change{Kind: "removed", Old: "int-or-string", New: describeType(n.new)}, "x-kubernetes-int-or-string removed: int-or-string -> %s", describeType(n.new))
		}
		n.old.Type, n.new.Type = "", ""
	case !o && nw:
		// From an integer or a string it relaxes; from any other type (or
		// from an untyped value) it rejects the values stored so far.
		if t := n.old.Type; t != "integer" && t != "string" {
			if c := n.run.vc.Type; c.Enabled {
				n.reportAt(c.ChangeEnforcement, config.CheckType, finding.Change{Kind: "changed", Old: t, New: "int-or-string"}, "type changed: %s -> int-or-string", finding.RenderString(t))
			}
		}
		n.old.Type, n.new.Type = "", ""
	}
}

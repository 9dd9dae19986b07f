package crdupgradesafety

import (
	"math"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// checkMultipleOf: a multipleOf added, or changed to a value that does not
// divide the old one, rejects values that were valid.
func checkMultipleOf(n *node) {
	o, nw := n.old.MultipleOf, n.new.MultipleOf
	n.old.MultipleOf, n.new.MultipleOf = nil, nil
	if nw == nil || !n.run.vc.ToggleEnabled(config.CheckMultipleOf) {
		return
	}
	if o == nil {
		n.report(config.CheckMultipleOf, "multipleOf added: (none) -> %s", formatFloat(*nw))
		return
	}
	if *o == *nw {
		return
	}
	if q := *o / *nw; *nw != 0 && q == math.Trunc(q) && !math.IsInf(q, 0) {
		return // every multiple of the old value is a multiple of the new one
	}
	n.report(config.CheckMultipleOf, "multipleOf changed: %s -> %s", formatFloat(*o), formatFloat(*nw))
}

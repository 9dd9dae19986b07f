package checks

import (
	"math/big"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of multipleOf: added or changed.
var _ = propertyCheckOf(45, finding.Register(finding.Descriptor{IDs: []string{config.CheckMultipleOf}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns}), checkMultipleOf)

// checkMultipleOf: a multipleOf added, or changed to a value that does not
// divide the old one, rejects values that were valid.
func checkMultipleOf(n *node) {
	o, nw := n.old.MultipleOf, n.new.MultipleOf
	n.old.MultipleOf, n.new.MultipleOf = nil, nil
	if nw == nil || !n.run.vc.ToggleEnabled(config.CheckMultipleOf) {
		return
	}
	formatBound(n, config.CheckMultipleOf, true, o, nw)
	if o == nil {
		n.report(config.CheckMultipleOf, finding.Change{Kind: "added", New: finding.FormatFloat(*nw)}, "multipleOf added: (none) -> %s", finding.FormatFloat(*nw))
		return
	}
	if *o == *nw {
		return
	}
	if divides(*nw, *o) {
		return // every multiple of the old value is a multiple of the new one
	}
	n.report(config.CheckMultipleOf, finding.Change{Kind: "changed", Old: finding.FormatFloat(*o), New: finding.FormatFloat(*nw)}, "multipleOf changed: %s -> %s", finding.FormatFloat(*o), finding.FormatFloat(*nw))
}

// divides reports whether old is an integer multiple of d. Both are taken as
// the decimals they are written as (0.1, not the binary float nearest to
// it), so that 0.1 divides 0.3 although 0.3/0.1 is 2.9999999999999996 in
// floating point.
func divides(d, old float64) bool {
	dr, ok1 := new(big.Rat).SetString(finding.FormatFloat(d))
	or, ok2 := new(big.Rat).SetString(finding.FormatFloat(old))
	if !ok1 || !ok2 || dr.Sign() == 0 {
		return false
	}
	return new(big.Rat).Quo(or, dr).IsInt()
}

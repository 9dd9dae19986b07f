package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of minimum .. maxProperties: a bound added or tightened.
var _ = propertyCheckOf(43, finding.Register(finding.Descriptor{IDs: []string{config.CheckMinimum, config.CheckMinLength, config.CheckMinItems, config.CheckMinProperties, config.CheckMaximum, config.CheckMaxLength, config.CheckMaxItems, config.CheckMaxProperties}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns}), checkBounds)

// The descriptor of exclusiveMinimum, exclusiveMaximum: a bound made exclusive.
var _ = propertyCheckOf(44, finding.Register(finding.Descriptor{IDs: []string{config.CheckExclusiveMinimum, config.CheckExclusiveMaximum}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns}), checkExclusiveBounds)

// checkBounds covers the eight min/max keywords with one generic rule: a
// bound added where none was, a minimum raised or a maximum lowered rejects
// values that were valid. Removing a bound or moving it outward relaxes.
func checkBounds(n *node) {
	vc := n.run.vc
	formatBound(n, config.CheckMinimum, vc.Minimum.Enabled, n.old.Minimum, n.new.Minimum)
	formatBound(n, config.CheckMaximum, vc.Maximum.Enabled, n.old.Maximum, n.new.Maximum)
	lower(n, config.CheckMinimum, vc.Minimum, &n.old.Minimum, &n.new.Minimum)
	lower(n, config.CheckMinLength, vc.MinLength, &n.old.MinLength, &n.new.MinLength)
	lower(n, config.CheckMinItems, vc.MinItems, &n.old.MinItems, &n.new.MinItems)
	lower(n, config.CheckMinProperties, vc.MinProperties, &n.old.MinProperties, &n.new.MinProperties)
	upper(n, config.CheckMaximum, vc.Maximum, &n.old.Maximum, &n.new.Maximum)
	upper(n, config.CheckMaxLength, vc.MaxLength, &n.old.MaxLength, &n.new.MaxLength)
	upper(n, config.CheckMaxItems, vc.MaxItems, &n.old.MaxItems, &n.new.MaxItems)
	upper(n, config.CheckMaxProperties, vc.MaxProperties, &n.old.MaxProperties, &n.new.MaxProperties)
}

func lower[T int64 | float64](n *node, id string, c config.MinCheck, o, nw **T) {
	bound(n, id, c.Enabled, c.AdditionEnforcement, c.IncreaseEnforcement, "increased", o, nw,
		func(old, new T) bool { return new > old })
}

func upper[T int64 | float64](n *node, id string, c config.MaxCheck, o, nw **T) {
	bound(n, id, c.Enabled, c.AdditionEnforcement, c.DecreaseEnforcement, "decreased", o, nw,
		func(old, new T) bool { return new < old })
}

// bound clears one bound keyword and reports it when it was added (at the
// addition enforcement) or tightened (at the tightening enforcement).
func bound[T int64 | float64](n *node, id string, enabled bool, addition, tightening config.Enforcement,
	verb string, o, nw **T, tighter func(old, new T) bool) {

	oldV, newV := *o, *nw
	*o, *nw = nil, nil
	if !enabled || newV == nil {
		return
	}
	switch {
	case oldV == nil:
		n.reportAt(addition, id, finding.Change{Kind: "added", New: finding.RenderPtr(newV)}, "%s added: (none) -> %s", id, finding.RenderPtr(newV))
	case tighter(*oldV, *newV):
		n.reportAt(tightening, id, finding.Change{Kind: verb, Old: finding.RenderPtr(oldV), New: finding.RenderPtr(newV)}, "%s %s: %s -> %s", id, verb, finding.RenderPtr(oldV), finding.RenderPtr(newV))
	}
}

// checkExclusiveBounds: making a minimum or maximum exclusive rejects the
// bound itself. Making it inclusive relaxes.
func checkExclusiveBounds(n *node) {
	turnedOn(n, config.CheckExclusiveMinimum, &n.old.ExclusiveMinimum, &n.new.ExclusiveMinimum, "exclusiveMinimum set: the minimum itself is no longer allowed")
	turnedOn(n, config.CheckExclusiveMaximum, &n.old.ExclusiveMaximum, &n.new.ExclusiveMaximum, "exclusiveMaximum set: the maximum itself is no longer allowed")
}

// turnedOn clears a boolean keyword and reports it when it went from false
// to true, the tightening direction for every keyword that uses it.
func turnedOn(n *node, id string, o, nw *bool, message string) {
	oldV, newV := *o, *nw
	*o, *nw = false, false
	if !oldV && newV && n.run.vc.ToggleEnabled(id) {
		n.report(id, finding.Change{Kind: "set", Old: "false", New: "true"}, "%s", message)
	}
}

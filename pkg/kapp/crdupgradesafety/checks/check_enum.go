package checks

import (
	"bytes"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of enum: an enum added or a value removed.
var _ = propertyCheckOf(41, finding.Register(finding.Descriptor{IDs: []string{config.CheckEnum}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns}), checkEnum)

// checkEnum: an enum added where none was, or an allowed value removed,
// rejects values that were valid. Adding values to an existing enum is safe
// by default (additionEnforcement: IfPreviouslyConstrained); dropping the
// whole enum relaxes. Value order does not matter.
func checkEnum(n *node) {
	o, nw := n.old.Enum, n.new.Enum
	n.old.Enum, n.new.Enum = nil, nil
	c := n.run.vc.Enum
	if !c.Enabled || len(nw) == 0 {
		return
	}
	if sameEnum(o, nw) {
		return
	}
	if len(o) == 0 {
		if c.AdditionEnforcement != config.EnforcementNone {
			n.report(config.CheckEnum, finding.Change{Kind: "constraintAdded", New: finding.FactList(enumValues(nw))}, "enum constraint added: %s", finding.ValueList(enumValues(nw)))
		}
		return
	}
	oldSet, newSet := enumSet(o), enumSet(nw)
	if c.RemovalEnforcement.Reports() {
		if removed := missingFrom(enumValues(o), newSet); len(removed) > 0 {
			n.reportAt(c.RemovalEnforcement, config.CheckEnum, finding.Change{Kind: "valuesRemoved", Old: finding.FactList(removed)}, "enum values removed: %s", finding.ValueList(removed))
		}
	}
	if c.AdditionEnforcement == config.EnforcementStrict {
		if added := missingFrom(enumValues(nw), oldSet); len(added) > 0 {
			n.report(config.CheckEnum, finding.Change{Kind: "valuesAdded", New: finding.FactList(added)}, "enum values added: %s", finding.ValueList(added))
		}
	}
}

func enumValues(vals []apiextv1.JSON) []string {
	out := make([]string, len(vals))
	for i := range vals {
		out[i] = finding.CanonicalJSON(vals[i].Raw)
	}
	return out
}

func enumSet(vals []apiextv1.JSON) map[string]struct{} {
	set := make(map[string]struct{}, len(vals))
	for _, v := range enumValues(vals) {
		set[v] = struct{}{}
	}
	return set
}

// missingFrom returns the values (in their order, once each) not in set.
func missingFrom(vals []string, set map[string]struct{}) []string {
	var out []string
	seen := map[string]struct{}{}
	for _, v := range vals {
		_, in := set[v]
		_, dup := seen[v]
		if !in && !dup {
			out = append(out, v)
			seen[v] = struct{}{}
		}
	}
	return out
}

// sameEnum is the fast path: the same values in the same order, byte for byte.
func sameEnum(a, b []apiextv1.JSON) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Raw, b[i].Raw) {
			return false
		}
	}
	return true
}

package checks

import (
	"sort"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of required: a new required field on an object that existed.
var _ = propertyCheckOf(49, finding.Register(finding.Descriptor{IDs: []string{config.CheckRequired}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyDefaultOrOptional, Unaffected: finding.UnaffectedWarns}), checkRequired)

// checkRequired: a field newly required on an object that already existed
// invalidates objects without it. A required field made optional relaxes.
// A new optional parent may bring required children: new properties are not
// walked, so they are not reported. A field made required that has the same
// default before and after is not reported either: the apiserver applies
// defaults (to absent fields and to nulls) before it validates, on reads
// and on writes, so no stored object and no writer can lack it
// (TestRequiredWithSameDefaultAgreesWithAPIServer proves it).
func checkRequired(n *node) {
	o, nw := n.old.Required, n.new.Required
	n.old.Required, n.new.Required = nil, nil
	c := n.run.vc.Required
	if !c.Enabled || !c.NewEnforcement.Reports() || len(nw) == 0 {
		return
	}
	had := make(map[string]struct{}, len(o))
	for _, r := range o {
		had[r] = struct{}{}
	}
	for name := range n.sameDefault {
		had[name] = struct{}{}
	}
	added := missingFrom(nw, had)
	if len(added) == 0 {
		return
	}
	sort.Strings(added)
	n.reportAt(c.NewEnforcement, config.CheckRequired, finding.Change{Kind: "added", New: finding.FactJSON(added)}, "new required fields: %s", finding.QuoteList(added))
}

// propertiesWithSameDefault returns the properties named in required that
// both schemas declare with the same default (nil when there are none).
func propertiesWithSameDefault(required []string, old, new *apiextv1.JSONSchemaProps) map[string]bool {
	var out map[string]bool
	for _, name := range required {
		o, okOld := old.Properties[name]
		nw, okNew := new.Properties[name]
		if okOld && okNew && o.Default != nil && nw.Default != nil && finding.SameJSON(o.Default, nw.Default) {
			if out == nil {
				out = map[string]bool{}
			}
			out[name] = true
		}
	}
	return out
}

package crdupgradesafety

import (
	"sort"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// checkRequired: a field newly required on an object that already existed
// invalidates objects without it. A required field made optional relaxes.
// A new optional parent may bring required children: new properties are not
// walked, so they are not reported.
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
	added := missingFrom(nw, had)
	if len(added) == 0 {
		return
	}
	sort.Strings(added)
	n.reportAt(c.NewEnforcement, config.CheckRequired, "new required fields: %s", quoteList(added))
}

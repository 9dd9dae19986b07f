package checks

import (
	"strconv"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of celValidation: a CEL rule added or changed.
var _ = propertyCheckOf(52, finding.Register(finding.Descriptor{IDs: []string{config.CheckCELValidation}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns}), checkCELValidation)

// checkCELValidation: a CEL rule in x-kubernetes-validations added, or its
// rule text changed, may reject objects that were valid. Rules are matched
// by their text (and optionalOldSelf, which changes when a transition rule
// runs), so message-only edits and reordering are not findings; removing a
// rule relaxes.
func checkCELValidation(n *node) {
	o, nw := n.old.XValidations, n.new.XValidations
	n.old.XValidations, n.new.XValidations = nil, nil
	if len(nw) == 0 || !n.run.vc.ToggleEnabled(config.CheckCELValidation) {
		return
	}
	had := make(map[celRuleKey]struct{}, len(o))
	for _, r := range o {
		had[celKey(r)] = struct{}{}
	}
	for _, r := range nw {
		if _, ok := had[celKey(r)]; !ok {
			n.report(config.CheckCELValidation, finding.Change{Kind: "rule", New: r.Rule}, "validation rule added or changed: %s", finding.BoundText(strconv.Quote(r.Rule), finding.MaxValueBytes))
		}
	}
}

// celRuleKey identifies a rule: its text, and optionalOldSelf, which
// changes when a transition rule runs.
type celRuleKey struct {
	rule            string
	optionalOldSelf bool
}

func celKey(r apiextv1.ValidationRule) celRuleKey {
	return celRuleKey{rule: r.Rule, optionalOldSelf: IsTrue(r.OptionalOldSelf)}
}

package objects

import (
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ConversionAtApplyTime is the conversionWebhook verdict of an update whose
// new conversion code ships in the same kapp deploy (o.Shipped: workloads
// that serve the webhook, changed in this deploy and rolled out before the
// CRD changes): a probe now would ask the code running now (the old
// release, or nothing before a first conversion webhook), whose refusals
// and silence say nothing of the new code. Nil when the update needs no
// probe (NeedsConversionProbe), nothing ships (the code running now is the
// code: probe it), or the check is off.
//
// The conversion is judged at apply time: crd-upgrade-safety's admission
// webhook (o.AdmissionWebhook) probes the stored objects through the code
// then running when kapp updates the CRD, after the rollout, and denies
// the update on a refusal or a loss. With it, one warning (kind
// applyTime, New the webhook configuration). Without it nothing verifies
// the new code before the data depends on it: the same finding, its
// severity failMode conversionUnverified's (an error under closed).
func ConversionAtApplyTime(old, new *apiextv1.CustomResourceDefinition, o *finding.ConversionOrdering, cfg *config.Settings) []finding.Finding {
	shipped := o.Shipped()
	if len(shipped) == 0 || !NeedsConversionProbe(old, new) {
		return nil
	}
	p := finding.NewPolicy(cfg, new.Name)
	if !p.Settings.Checks.CRD.ConversionWebhook.Enabled {
		return nil
	}
	refs := make([]string, len(shipped))
	for i, w := range shipped {
		refs[i] = w.Ref()
	}
	facts := *o
	facts.Workloads = slices.Clone(o.Workloads)
	fact := finding.Change{Kind: "applyTime", Old: strings.Join(refs, ", "), New: o.AdmissionWebhook}
	remedy := &finding.Remedy{Action: finding.RemedyJudgeAtApplyTime, Resources: refs, Detail: o.AdmissionWebhook}
	ships := "the new conversion code ships in this deploy (" + strings.Join(refs, ", ") + ", rolled out before the CRD changes)"
	if o.AdmissionWebhook != "" {
		p.CRDLevelWith(config.EnforcementWarn, "", config.CheckConversionWebhook, remedy, fact,
			"conversion judged at apply time: %s, so the conversion webhook answering now is not the code to judge; "+
				"the admission webhook (ValidatingWebhookConfiguration %s) probes the stored %s through it when kapp updates the CRD",
			ships, o.AdmissionWebhook, plural.Noun(new.Spec.Names.Kind))
	} else {
		fail := p.Settings.FailDecisionFor(config.FailConversionUnverified, nil)
		p.CRDLevelWith(fail.Decision.Enforcement(), "", config.CheckConversionWebhook, remedy, fact,
			"conversion not verified: %s, and no admission webhook of crd-upgrade-safety is registered for CRD updates to probe it then (failMode %s)",
			ships, fail.Mode)
	}
	for i := range p.Findings {
		p.Findings[i].Ordering = &facts
	}
	return p.Findings
}

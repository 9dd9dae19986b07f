package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ConversionOrderingFindings is ConversionOrderingFor judged in a policy
// of its own, as the engine's one call judges it with the pair's (for the
// check's tests alone).
func ConversionOrderingFindings(old, new *apiextv1.CustomResourceDefinition, o *finding.ConversionOrdering, cfg *config.Settings) []finding.Finding {
	if new == nil {
		return nil
	}
	p := finding.NewPolicy(cfg, new.Name)
	return p.Judged(ConversionOrderingFor(p, old, new, o))
}

package evaluation

import (
	"context"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// offlineFindings runs the checks of one pair that need no cluster: the
// engine's comparison of an update (from comparisons when they hold it),
// the apiserver's own validation of the change (see offlineValidation) and,
// in a kapp deploy, the order of the conversion webhook's rollout.
func offlineFindings(ctx context.Context, p Pair, oldFromFiles, live bool, cfg *config.Settings, comparisons *Comparisons) pairOutcome {
	v := newOfflineValidation(ctx, p, oldFromFiles, cfg)
	// The pair's one policy: its comparison's, then the engine's
	// judgement of the pair (crdupgradesafety.Judge).
	o := pairOutcome{policy: finding.NewPolicy(cfg, p.New.Name)}
	if p.Old != nil {
		o.findings = comparisons.compareWith(p, o.policy)
		o.findings = append(o.findings, checks.ConversionOrderingFindings(p.Old, p.New, p.Ordering, cfg)...)
	}
	rejected, replace, findings := v.finish(live)
	o.findings = append(o.findings, findings...)
	o.rejected, o.replace = rejected, replace
	if p.Key != "" {
		o.validators = comparisons.validatorsOf()
	}
	return o
}

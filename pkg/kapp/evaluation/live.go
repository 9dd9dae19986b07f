package evaluation

import (
	"context"
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
)

// objectsPerValidation batches existing custom resources for one
// crdupgradesafety.ValidateExisting call: large enough that the schema and
// CEL validators built per call are amortised, small enough to bound memory.
const objectsPerValidation = 2000

// validateBatch validates one batch of existing custom resources; tests
// replace it to watch the batches.
var validateBatch = crdupgradesafety.ValidateExisting

func livePairFindings(ctx context.Context, p Pair, o pairOutcome, cfg *config.Settings,
	cluster Cluster, tracker *liveTracker) ([]crdupgradesafety.Finding, error) {

	var findings []crdupgradesafety.Finding
	crd := &cfg.Checks.CRD
	// A fallback-on-replace update the validation already refused needs no
	// dry run: the apiserver stops at the same validation.
	decided := p.Strategy == StrategyFallbackOnReplace && o.replace != ""
	if p.Send != nil && !o.rejected && !decided && needsDryRun(p, cfg) {
		fs, rejected, replace, err := dryRunFindings(ctx, p, cfg, cluster)
		if err != nil {
			return nil, err
		}
		findings = append(findings, fs...)
		if rejected {
			o.rejected = true
			if p.Strategy == StrategyAlwaysReplace {
				o.replace = "" // the delete is refused: nothing is lost
			}
		}
		if replace != "" {
			o.replace = replace
		}
	}
	switch {
	case p.Old == nil:
	case o.replace != "":
		if crd.CRDDeletion.Enabled {
			count, err := cluster.CountCustomResources(ctx, p.Old)
			if de := deadlineError(ctx, err, ""); de != nil {
				return nil, fmt.Errorf("counting custom resources of CRD %s: %w", p.New.Name, de)
			}
			if err != nil {
				return nil, fmt.Errorf("checking replace of CRD %s: %w", p.New.Name, err)
			}
			findings = append(findings, crdupgradesafety.Deletion(p.New.Name, count-p.AlsoDeleted, o.replace, cfg)...)
		}
	case crd.ExistingResources.Enabled && !o.rejected:
		fs, err := existingResourceFindings(ctx, p, cfg, cluster, tracker)
		if err != nil {
			return nil, err
		}
		findings = append(findings, fs...)
	}
	return findings, nil
}

// existingResourceFindings validates the existing custom resources of an
// updated CRD under the new schema, read at every version the old CRD serves
// and the new CRD still has (objects come back converted to the version
// asked for, so each such version's new schema gets checked).
func existingResourceFindings(ctx context.Context, pair Pair, cfg *config.Settings,
	cluster Cluster, tracker *liveTracker) ([]crdupgradesafety.Finding, error) {

	inNew := map[string]bool{}
	for _, v := range pair.New.Spec.Versions {
		inNew[v.Name] = true
	}
	var findings []crdupgradesafety.Finding
	for _, v := range pair.Old.Spec.Versions {
		if !v.Served || !inNew[v.Name] {
			continue
		}
		var batch []map[string]any
		pages, objects := 0, 0
		flush := func() error {
			fs, err := validateBatch(pair.New, batch, cfg)
			if err != nil {
				return fmt.Errorf("validating existing custom resources of CRD %s version %s: %w", pair.New.Name, v.Name, err)
			}
			findings = append(findings, fs...)
			tracker.add(0, len(batch))
			clear(batch) // release the validated objects now, not when overwritten
			batch = batch[:0]
			return nil
		}
		err := cluster.ListCustomResources(ctx, pair.Old, v.Name, func(objs []map[string]any) error {
			pages, objects = pages+1, objects+len(objs)
			batch = append(batch, objs...)
			if len(batch) >= objectsPerValidation {
				return flush()
			}
			return nil
		})
		if de := deadlineError(ctx, err, pagesRead(pages, objects)); de != nil {
			return nil, fmt.Errorf("listing %s of CRD %s at version %s: %w", pair.Old.Spec.Names.Plural, pair.New.Name, v.Name, de)
		}
		if err != nil {
			return nil, fmt.Errorf("checking existing custom resources of CRD %s: %w", pair.New.Name, err)
		}
		if len(batch) > 0 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	return findings, nil
}

func removalFindings(ctx context.Context, r Removal, cfg *config.Settings,
	cluster Cluster) ([]crdupgradesafety.Finding, error) {

	n, err := cluster.CountCustomResources(ctx, r.CRD)
	if de := deadlineError(ctx, err, ""); de != nil {
		return nil, fmt.Errorf("counting custom resources of CRD %s: %w", r.CRD.Name, de)
	}
	if err != nil {
		return nil, fmt.Errorf("checking deletion of CRD %s: %w", r.CRD.Name, err)
	}
	return crdupgradesafety.Deletion(r.CRD.Name, n-r.AlsoDeleted, "", cfg), nil
}

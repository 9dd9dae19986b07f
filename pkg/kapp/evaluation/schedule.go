package evaluation

import (
	"context"
	goruntime "runtime"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
)

// pairOutcome is what the offline pass learnt about one pair and the live
// pass goes on from.
type pairOutcome struct {
	findings []finding.Finding
	// rejected: the apiserver would refuse the change (apiserverRejects
	// enabled), so the CRD stays as it is: no request is dry-run and the
	// existing custom resources are not checked against the new schema.
	rejected bool
	// replace says why kapp deletes and recreates the CRD instead of
	// updating it; "" when it does not (or the dry run has yet to tell).
	replace string
	// validators keeps the validators of stored objects' batches (nil:
	// built for each batch).
	validators *crdupgradesafety.Validators
	// policy is the pair's policy, entered once for its comparison and
	// its judgement (crdupgradesafety.Pair.Policy).
	policy *finding.Policy
}

// Evaluate runs the engine over a plan and returns every finding, sorted
// (see finding.SortFindings).
//
// Offline, for every pair: the comparison of an update, and the apiserver's
// own validation of the create or update (apiserverRejects; for a replace,
// of the create that follows the delete); and without a cluster, each
// removal is a crdDeletion finding whose custom resources cannot be counted
// (a CRD missing from the new inputs). With a cluster, the live checks
// enabled in cfg run too: the server-side dry run of pairs with Send,
// existingResources for every update, and crdDeletion, with the count, for
// every removal and every update kapp carries out as a replace. Any API
// error fails the evaluation (fail closed), wrapped with the CRD it
// concerns.
//
// The waiver annotations of the plan's CRDs are waivers of this run (see
// waivedSettings); an invalid one fails it (config.ErrInvalidWaiver). A
// waiver of a CRD the run evaluates that matches none of its findings is
// a staleWaiver warning (staleWaivers).
func Evaluate(ctx context.Context, plan Plan, cfg *config.Settings, cluster Cluster) ([]finding.Finding, error) {
	cfg, err := waivedSettings(plan, cfg, cluster != nil)
	if err != nil {
		return nil, err
	}
	timing := startEvaluationTiming(plan)
	defer timing.print()
	cluster = timing.counting(cluster)

	var pairs []Pair
	for _, p := range plan.Pairs {
		if p.Old != nil && p.Strategy == StrategySkip {
			continue // kapp leaves the CRD alone
		}
		p.conversion = &plan.Conversion
		pairs = append(pairs, p)
	}

	// Offline: CPU bound, one CRD per core at a time. With a cluster, each
	// pair's live checks follow its offline checks at once (at most
	// DefaultConcurrency pairs at a time): requests to the apiserver overlap
	// the offline work of the other pairs.
	outcomes := make([]pairOutcome, len(pairs))
	workers := goruntime.GOMAXPROCS(0)
	cpu := make(chan struct{}, workers)
	offline := func(ctx context.Context, i int) {
		cpu <- struct{}{}
		outcomes[i] = offlineFindings(ctx, pairs[i], plan.OldFromFiles, cluster != nil, cfg, plan.Comparisons)
		<-cpu
		timing.offlineDone()
	}

	var live [][]finding.Finding
	if cluster == nil {
		err = parallel.ForEach(ctx, len(pairs), workers, func(ctx context.Context, i int) error {
			offline(ctx, i)
			// The engine's one call per pair: the samples read (if any)
			// against the offline findings, and the samples through the
			// conversion webhook the run names (conversionWebhook), every
			// finding judged once.
			var err error
			outcomes[i].findings, err = crdupgradesafety.Judge(ctx, crdupgradesafety.Pair{Old: pairs[i].Old, New: pairs[i].New,
				Findings: outcomes[i].findings, Compared: true, Policy: outcomes[i].policy, Ordering: pairs[i].Ordering,
				Conversion: &samplesProber{pair: pairs[i], cfg: cfg}}, cfg, samples(pairs[i], cfg))
			return err
		})
	} else {
		live, err = liveFindings(ctx, pairs, offline, outcomes, plan.Removals, cfg, cluster, plan.Progress)
	}
	timing.end(len(pairs))
	if err != nil {
		return nil, err
	}

	var all []finding.Finding
	for _, o := range outcomes {
		all = append(all, o.findings...)
	}
	for _, fs := range live {
		all = append(all, fs...)
	}
	if cluster == nil {
		// No cluster to count the custom resources a removal loses: the
		// removal's one call judges it deleted with every one it has.
		for _, r := range plan.Removals {
			fs, err := crdupgradesafety.Judge(ctx, crdupgradesafety.Pair{Old: r.CRD,
				Deletion: &crdupgradesafety.Deletion{Uncounted: true}}, cfg, nil)
			if err != nil {
				return nil, err
			}
			all = append(all, fs...)
		}
	}
	all = append(all, staleWaivers(pairs, plan.Removals, cfg, all)...)
	finding.SortFindings(all)
	return all, nil
}

// liveFindings runs, one CRD per worker, DefaultConcurrency CRDs at a time,
// for each pair its offline checks (offline, which fills outcomes) and then
// its live checks: the dry run, then either the count of the custom
// resources a replace deletes or the validation of the existing ones; for
// each removal the count of its custom resources.
func liveFindings(ctx context.Context, pairs []Pair, offline func(context.Context, int), outcomes []pairOutcome,
	removals []Removal, cfg *config.Settings, cluster Cluster, progress func(LiveProgress)) ([][]finding.Finding, error) {

	n := len(pairs)
	if cfg.Checks.CRD.CRDDeletion.Enabled {
		n += len(removals)
	}
	results := make([][]finding.Finding, n)
	tracker := &liveTracker{report: progress, p: LiveProgress{CRDs: n}}
	err := parallel.ForEach(ctx, n, DefaultConcurrency, func(ctx context.Context, i int) error {
		var err error
		if i < len(pairs) {
			offline(ctx, i)
			var jp crdupgradesafety.Pair
			var stored crdupgradesafety.Objects
			var denial *webhookDenial
			jp, stored, denial, err = livePair(ctx, pairs[i], outcomes[i], cfg, cluster, tracker)
			if err == nil {
				// The engine's one call per pair: its live views read
				// from the sources the cluster is adapted to, the stored
				// objects read against the offline findings, every
				// finding judged once, here rather than in outcomes;
				// then what a denial by our own webhook adds to them,
				// said once.
				results[i], err = crdupgradesafety.Judge(ctx, jp, cfg, stored)
				results[i] = append(results[i], denial.findings(pairs[i].New.Name, results[i], cfg)...)
			}
			outcomes[i].findings = nil
		} else {
			results[i], err = removalFindings(ctx, removals[i-len(pairs)], cfg, cluster)
		}
		if err == nil {
			tracker.add(1, 0)
		}
		return err
	})
	return results, err
}

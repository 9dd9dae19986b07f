package preflight

import (
	"context"
	"fmt"
	"runtime"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	"github.com/crdsafety/kapp/pkg/kapp/preflight/crdupgradesafety"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Pair is one CRD to check: Old is the CRD on the cluster (or in the old
// files), nil for a CRD that does not exist yet.
type Pair struct {
	Old, New *apiextv1.CustomResourceDefinition
}

// Removal is a CRD about to be deleted. AlsoDeleted is how many of its
// custom resources the same change set deletes explicitly; only the others
// would be lost with the CRD.
type Removal struct {
	CRD         *apiextv1.CustomResourceDefinition
	AlsoDeleted int
}

// Plan is everything one run checks.
type Plan struct {
	Pairs    []Pair
	Removals []Removal
}

// objectsPerValidation batches existing custom resources for one
// crdupgradesafety.ValidateExisting call: large enough that the schema and
// CEL validators built per call are amortised, small enough to bound memory.
const objectsPerValidation = 2000

// Evaluate runs the engine over a plan and returns every finding, sorted
// (see crdupgradesafety.SortFindings). With a nil cluster only the offline comparison runs;
// with one, the live checks enabled in cfg run too: existingResources for
// every updated CRD and crdDeletion for every removal. Any API error fails
// the evaluation (fail closed), wrapped with the CRD it concerns.
func Evaluate(ctx context.Context, plan Plan, cfg *config.CRDUpgradeSafety, cluster Cluster) ([]crdupgradesafety.Finding, error) {
	var updates []Pair
	for _, p := range plan.Pairs {
		if p.Old != nil {
			updates = append(updates, p)
		}
	}

	// Offline comparison: CPU bound, one CRD per core at a time.
	perCRD := make([][]crdupgradesafety.Finding, len(updates))
	err := parallel.ForEach(ctx, len(updates), runtime.GOMAXPROCS(0), func(_ context.Context, i int) error {
		perCRD[i] = crdupgradesafety.Compare(updates[i].Old, updates[i].New, cfg)
		return nil
	})
	if err != nil {
		return nil, err
	}

	if cluster != nil {
		live, err := liveFindings(ctx, updates, plan.Removals, cfg, cluster)
		if err != nil {
			return nil, err
		}
		perCRD = append(perCRD, live...)
	}

	var all []crdupgradesafety.Finding
	for _, fs := range perCRD {
		all = append(all, fs...)
	}
	crdupgradesafety.SortFindings(all)
	return all, nil
}

// liveFindings runs the checks that read custom resources, one CRD per
// worker, DefaultConcurrency CRDs at a time.
func liveFindings(ctx context.Context, updates []Pair, removals []Removal,
	cfg *config.CRDUpgradeSafety, cluster Cluster) ([][]crdupgradesafety.Finding, error) {

	existing := cfg.Checks.CRD.ExistingResources.Enabled
	deletion := cfg.Checks.CRD.CRDDeletion.Enabled
	type task struct {
		pair    *Pair
		removal *Removal
	}
	var tasks []task
	if existing {
		for i := range updates {
			tasks = append(tasks, task{pair: &updates[i]})
		}
	}
	if deletion {
		for i := range removals {
			tasks = append(tasks, task{removal: &removals[i]})
		}
	}

	results := make([][]crdupgradesafety.Finding, len(tasks))
	err := parallel.ForEach(ctx, len(tasks), DefaultConcurrency, func(ctx context.Context, i int) error {
		var err error
		if t := tasks[i]; t.pair != nil {
			results[i], err = existingResourceFindings(ctx, *t.pair, cfg, cluster)
		} else {
			results[i], err = removalFindings(ctx, *t.removal, cfg, cluster)
		}
		return err
	})
	return results, err
}

// existingResourceFindings validates the existing custom resources of an
// updated CRD under the new schema, read at every version the old CRD serves
// and the new CRD still has (objects come back converted to the version
// asked for, so each such version's new schema gets checked).
func existingResourceFindings(ctx context.Context, pair Pair, cfg *config.CRDUpgradeSafety,
	cluster Cluster) ([]crdupgradesafety.Finding, error) {

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
		flush := func() error {
			fs, err := crdupgradesafety.ValidateExisting(pair.New, batch, cfg)
			if err != nil {
				return fmt.Errorf("validating existing custom resources of CRD %s version %s: %w", pair.New.Name, v.Name, err)
			}
			findings = append(findings, fs...)
			batch = batch[:0]
			return nil
		}
		err := cluster.ListCustomResources(ctx, pair.Old, v.Name, func(objs []map[string]any) error {
			batch = append(batch, objs...)
			if len(batch) >= objectsPerValidation {
				return flush()
			}
			return nil
		})
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

func removalFindings(ctx context.Context, r Removal, cfg *config.CRDUpgradeSafety,
	cluster Cluster) ([]crdupgradesafety.Finding, error) {

	n, err := cluster.CountCustomResources(ctx, r.CRD)
	if err != nil {
		return nil, fmt.Errorf("checking deletion of CRD %s: %w", r.CRD.Name, err)
	}
	return crdupgradesafety.Deletion(r.CRD.Name, n-r.AlsoDeleted, cfg), nil
}

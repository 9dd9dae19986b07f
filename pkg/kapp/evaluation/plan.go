package evaluation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Pair is one CRD to check: Old is the CRD on the cluster (or in the old
// files), nil for a CRD that does not exist yet. Old and New are the same
// object when the old and new files hold the same document: kapp sends no
// update for it (its validation is the old CRD's own).
type Pair struct {
	Old, New *apiextv1.CustomResourceDefinition
	// Strategy is how kapp applies the update of Old to New: one of the
	// Strategy* constants (kapp.k14s.io/update-strategy, or kapp's
	// --apply-default-update-strategy). It means nothing for a create.
	Strategy string
	// AlsoDeleted is how many custom resources of Old the same change set
	// deletes explicitly; a replace loses only the others.
	AlsoDeleted int
	// Send is the object kapp sends to create or update the CRD (for an
	// always-replace update: the live CRD it deletes). When set, the change
	// is sent to the apiserver as a server-side dry run; nil: no dry run
	// (the tools command).
	Send *unstructured.Unstructured
	// Samples are custom resources of the CRD to read as stored objects
	// when there is no cluster (kapp tools crd-upgrade-safety --objects):
	// their impact is computed as for the stored objects of a cluster.
	Samples []map[string]any
	// conversion is the plan's ConversionProbe (Evaluate sets it).
	conversion *ConversionProbe
	// Key, when set, identifies the content of Old and New (the webhook:
	// the SHA-256 of both objects' JSON): the comparison of the pair may
	// then come from Plan.Comparisons. "": compared every time.
	Key string
	// Ordering, in a kapp deploy, is what the change set holds about the
	// workloads that serve the new CRD's conversion webhook (the kapp
	// hook reads it from kapp's change graph): the conversionOrdering
	// check. nil: not a kapp deploy, or no Service of the change set.
	Ordering *finding.ConversionOrdering
}

// kapp's update strategies (kapp.k14s.io/update-strategy), as kapp's
// clusterapply carries them out.
const (
	UpdateStrategyAnnotation = "kapp.k14s.io/update-strategy"
	// StrategyUpdate: a plain update (PUT).
	StrategyUpdate = ""
	// StrategyFallbackOnReplace: an update; when the apiserver refuses it
	// as invalid (status 422), kapp deletes the CRD and creates it again.
	StrategyFallbackOnReplace = "fallback-on-replace"
	// StrategyAlwaysReplace: kapp deletes the CRD and creates it again.
	StrategyAlwaysReplace = "always-replace"
	// StrategySkip: kapp leaves the CRD as it is.
	StrategySkip = "skip"
)

// updateStrategies are the values kapp accepts for an update strategy.
var updateStrategies = []string{StrategyAlwaysReplace, StrategyFallbackOnReplace, StrategySkip}

// UpdateStrategyOf is the update strategy kapp uses for an update of crd:
// its kapp.k14s.io/update-strategy annotation, else def (kapp deploy's
// --apply-default-update-strategy). An unknown strategy is an error, as it
// is for kapp.
func UpdateStrategyOf(crd *apiextv1.CustomResourceDefinition, def string) (string, error) {
	strategy, ok := crd.Annotations[UpdateStrategyAnnotation]
	source := "annotation " + UpdateStrategyAnnotation
	if !ok {
		strategy, source = def, "default update strategy"
	}
	if strategy == StrategyUpdate || slices.Contains(updateStrategies, strategy) {
		return strategy, nil
	}
	return "", fmt.Errorf("CRD %s: unknown update strategy %q in %s (allowed: %s, or empty for a plain update)",
		crd.Name, strategy, source, strings.Join(updateStrategies, ", "))
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
	// OldFromFiles says the old CRDs were read from files (not from the
	// cluster): an old CRD the apiserver would itself refuse gives a
	// warning.
	OldFromFiles bool
	// Progress, when set, is told how far the live checks are: after each
	// CRD they are done with and each batch of custom resources validated
	// (never per object). Calls come from the workers, one at a time.
	Progress func(LiveProgress)
	// Comparisons, when set, keeps the comparisons of pairs with a Key
	// for the runs that follow (the webhook's).
	Comparisons *Comparisons
	// Conversion says where and within what budget conversion webhooks are
	// probed (the conversionWebhook check); the zero value: the webhook
	// each new CRD names, every object, live only.
	Conversion ConversionProbe
}

// NeedsCluster reports whether evaluating plan under cfg reads the cluster.
func NeedsCluster(plan Plan, cfg *config.Settings) bool {
	crd := &cfg.Checks.CRD
	if crd.CRDDeletion.Enabled && len(plan.Removals) > 0 {
		return true
	}
	for _, p := range plan.Pairs {
		if p.Old != nil && p.Strategy == StrategySkip {
			continue
		}
		switch {
		case p.Send != nil && needsDryRun(p, cfg):
			return true
		case p.Old != nil && crd.ExistingResources.Enabled:
			return true
		case p.Old != nil && crd.CRDDeletion.Enabled &&
			(p.Strategy == StrategyAlwaysReplace || p.Strategy == StrategyFallbackOnReplace):
			return true
		}
	}
	return false
}

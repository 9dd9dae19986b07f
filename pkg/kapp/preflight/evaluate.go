package preflight

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
}

// objectsPerValidation batches existing custom resources for one
// crdupgradesafety.ValidateExisting call: large enough that the schema and
// CEL validators built per call are amortised, small enough to bound memory.
const objectsPerValidation = 2000

// validateBatch validates one batch of existing custom resources; tests
// replace it to watch the batches.
var validateBatch = crdupgradesafety.ValidateExisting

// pairOutcome is what the offline pass learnt about one pair and the live
// pass goes on from.
type pairOutcome struct {
	findings []crdupgradesafety.Finding
	// rejected: the apiserver would refuse the change (apiserverRejects
	// enabled), so the CRD stays as it is: no request is dry-run and the
	// existing custom resources are not checked against the new schema.
	rejected bool
	// replace says why kapp deletes and recreates the CRD instead of
	// updating it; "" when it does not (or the dry run has yet to tell).
	replace string
}

// Evaluate runs the engine over a plan and returns every finding, sorted
// (see crdupgradesafety.SortFindings).
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
func Evaluate(ctx context.Context, plan Plan, cfg *config.CRDUpgradeSafety, cluster Cluster) ([]crdupgradesafety.Finding, error) {
	var timing *evaluationTiming
	if out := timingOut(); out != nil {
		timing = &evaluationTiming{out: out, removals: len(plan.Removals)}
		if cluster != nil {
			timing.cluster = &countingCluster{Cluster: cluster}
			cluster = timing.cluster
		}
		defer timing.print()
	}
	start := time.Now()
	var pairs []Pair
	for _, p := range plan.Pairs {
		if p.Old != nil && p.Strategy == StrategySkip {
			continue // kapp leaves the CRD alone
		}
		pairs = append(pairs, p)
	}

	// Offline: CPU bound, one CRD per core at a time. With a cluster, each
	// pair's live checks follow its offline checks at once (at most
	// DefaultConcurrency pairs at a time): requests to the apiserver overlap
	// the offline work of the other pairs.
	outcomes := make([]pairOutcome, len(pairs))
	workers := goruntime.GOMAXPROCS(0)
	// With fewer pairs than cores, a pair's validations also run side by
	// side; otherwise the cores are busy with other pairs, and one
	// validation at a time per pair bounds memory.
	spare := len(pairs) < workers
	cpu := make(chan struct{}, workers)
	var offlineDone atomic.Int64 // when the last offline pass ended (unix nanos)
	offline := func(ctx context.Context, i int) {
		cpu <- struct{}{}
		outcomes[i] = offlineFindings(ctx, pairs[i], plan.OldFromFiles, spare, cluster != nil, cfg)
		<-cpu
		now := time.Now().UnixNano()
		for old := offlineDone.Load(); now > old && !offlineDone.CompareAndSwap(old, now); old = offlineDone.Load() {
		}
	}

	var live [][]crdupgradesafety.Finding
	var err error
	if cluster == nil {
		err = parallel.ForEach(ctx, len(pairs), workers, func(ctx context.Context, i int) error {
			offline(ctx, i)
			return nil
		})
	} else {
		live, err = liveFindings(ctx, pairs, offline, outcomes, plan.Removals, cfg, cluster, plan.Progress)
	}
	if timing != nil {
		timing.pairs = len(pairs)
		end := time.Now()
		if done := offlineDone.Load(); done > 0 {
			timing.offline = time.Unix(0, done).Sub(start)
		}
		if cluster != nil {
			timing.live = end.Sub(start) - timing.offline
		}
	}
	if err != nil {
		return nil, err
	}

	var all []crdupgradesafety.Finding
	for _, o := range outcomes {
		all = append(all, o.findings...)
	}
	for _, fs := range live {
		all = append(all, fs...)
	}
	if cluster == nil {
		// No cluster to count the custom resources a removal loses.
		for _, r := range plan.Removals {
			all = append(all, crdupgradesafety.Dropped(r.CRD.Name, cfg)...)
		}
	}
	crdupgradesafety.SortFindings(all)
	return all, nil
}

// NeedsCluster reports whether evaluating plan under cfg reads the cluster.
func NeedsCluster(plan Plan, cfg *config.CRDUpgradeSafety) bool {
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

// needsDryRun: the dry run reports what the apiserver refuses
// (apiserverRejects), and it tells whether fallback-on-replace falls back
// to a replace (crdDeletion).
func needsDryRun(p Pair, cfg *config.CRDUpgradeSafety) bool {
	return cfg.Checks.CRD.ApiserverRejects.Enabled ||
		(p.Old != nil && p.Strategy == StrategyFallbackOnReplace && cfg.Checks.CRD.CRDDeletion.Enabled)
}

// offlineFindings compares an update and validates the change as the
// apiserver does. For fallback-on-replace it decides whether kapp falls
// back to a replace: the apiserver refuses an update its own validation
// rejects with status 422 Invalid, which is the only error kapp falls back
// on. A replace ends with a create, validated as such.
//
// A create or plain update that a server-side dry run will send (live, the
// pair has Send) is left to it: the apiserver runs this same validation on
// the request, in its own version, the one that decides; repeating it here
// would double the work of a large deploy. What the dry run cannot show is
// still validated here: the create that follows the delete of a replace,
// and whether fallback-on-replace falls back.
func offlineFindings(ctx context.Context, p Pair, oldFromFiles, spareCores, live bool, cfg *config.CRDUpgradeSafety) pairOutcome {
	var o pairOutcome
	name := p.New.Name
	validate := cfg.Checks.CRD.ApiserverRejects.Enabled
	dryRunValidates := live && p.Send != nil && (p.Old == nil || p.Strategy == StrategyUpdate)
	// Each CRD is converted for the apiserver's validation once, however
	// many validations it goes through, and only when one needs it.
	prepOld := sync.OnceValue(func() *crdupgradesafety.PreparedCRD { return crdupgradesafety.PrepareCRD(p.Old) })
	prepNew := sync.OnceValue(func() *crdupgradesafety.PreparedCRD { return crdupgradesafety.PrepareCRD(p.New) })
	// The same object on both sides: the old and new inputs hold the same
	// document (the tools command decodes identical documents once). kapp
	// sends no update for it, and creating it is what the old CRD's own
	// validation checks.
	unchanged := p.Old == p.New
	if unchanged {
		prepNew = prepOld
	}

	// An old CRD from a file is validated on its own (a warning when the
	// apiserver would refuse to create it), with spare cores beside the
	// rest: validations of a large CRD are most of the work of a pair.
	var oldErrs field.ErrorList
	var oldDone chan struct{}
	if p.Old != nil && oldFromFiles && validate {
		prepared := prepOld()
		oldDone = make(chan struct{})
		validateOld := func() {
			defer close(oldDone)
			oldErrs = prepared.Create(ctx)
		}
		if spareCores {
			go validateOld()
		} else {
			validateOld()
		}
	}
	createErrs := func() []crdupgradesafety.Rejection {
		if unchanged && oldDone != nil {
			<-oldDone
			return crdupgradesafety.Rejections(oldErrs)
		}
		return crdupgradesafety.Rejections(prepNew().Create(ctx))
	}
	updateErrs := func() []crdupgradesafety.Rejection {
		return crdupgradesafety.Rejections(prepNew().Update(ctx, prepOld()))
	}
	if p.Old != nil {
		o.findings = crdupgradesafety.Compare(p.Old, p.New, cfg)
	}

	var verb string
	var errs []crdupgradesafety.Rejection
	switch {
	case p.Old == nil:
		if validate && !dryRunValidates {
			verb, errs = "create", createErrs()
		}
	case p.Strategy == StrategyAlwaysReplace:
		o.replace = "update strategy " + StrategyAlwaysReplace
		if validate {
			verb, errs = "create that follows the delete ("+o.replace+")", createErrs()
		}
	case p.Strategy == StrategyFallbackOnReplace && (validate || cfg.Checks.CRD.CRDDeletion.Enabled):
		if refused := updateErrs(); len(refused) > 0 {
			o.replace = fmt.Sprintf("update strategy %s, and the apiserver refuses the update (%s)",
				StrategyFallbackOnReplace, describe(refused))
			if validate {
				verb, errs = "create that follows the delete ("+StrategyFallbackOnReplace+")", createErrs()
			}
		}
	default:
		if validate && !unchanged && !dryRunValidates {
			verb, errs = "update", updateErrs()
		}
	}
	if len(errs) > 0 {
		o.findings = append(o.findings, crdupgradesafety.Rejected(name, verb, errs, cfg)...)
		o.rejected = true
	}
	if oldDone != nil {
		<-oldDone
		o.findings = append(o.findings, crdupgradesafety.InvalidOld(name, oldErrs, cfg)...)
	}
	return o
}

// describe renders the first rejection, and how many more there are.
func describe(rs []crdupgradesafety.Rejection) string {
	s := rs[0].Message
	if f := crdupgradesafety.V1FieldPath(rs[0].Field); f != "" {
		s = f + ": " + s
	}
	if len(rs) > 1 {
		s += fmt.Sprintf("; and %d more", len(rs)-1)
	}
	return s
}

// liveFindings runs, one CRD per worker, DefaultConcurrency CRDs at a time,
// for each pair its offline checks (offline, which fills outcomes) and then
// its live checks: the dry run, then either the count of the custom
// resources a replace deletes or the validation of the existing ones; for
// each removal the count of its custom resources.
func liveFindings(ctx context.Context, pairs []Pair, offline func(context.Context, int), outcomes []pairOutcome,
	removals []Removal, cfg *config.CRDUpgradeSafety, cluster Cluster, progress func(LiveProgress)) ([][]crdupgradesafety.Finding, error) {

	n := len(pairs)
	if cfg.Checks.CRD.CRDDeletion.Enabled {
		n += len(removals)
	}
	results := make([][]crdupgradesafety.Finding, n)
	tracker := &liveTracker{report: progress, p: LiveProgress{CRDs: n}}
	err := parallel.ForEach(ctx, n, DefaultConcurrency, func(ctx context.Context, i int) error {
		var err error
		if i < len(pairs) {
			offline(ctx, i)
			results[i], err = livePairFindings(ctx, pairs[i], outcomes[i], cfg, cluster, tracker)
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

func livePairFindings(ctx context.Context, p Pair, o pairOutcome, cfg *config.CRDUpgradeSafety,
	cluster Cluster, tracker *liveTracker) ([]crdupgradesafety.Finding, error) {

	var findings []crdupgradesafety.Finding
	crd := &cfg.Checks.CRD
	// A fallback-on-replace update the validation already refused needs no
	// dry run: the apiserver stops at the same validation.
	decided := p.Strategy == StrategyFallbackOnReplace && o.replace != ""
	if p.Send != nil && !o.rejected && !decided && needsDryRun(p, cfg) {
		fs, replace, err := dryRunFindings(ctx, p, cfg, cluster)
		if err != nil {
			return nil, err
		}
		if len(fs) > 0 {
			findings = append(findings, fs...)
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
			findings = append(findings, crdupgradesafety.Replacement(p.New.Name, count-p.AlsoDeleted, o.replace, cfg)...)
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

// dryRunFindings sends the request kapp would send first for the pair as a
// server-side dry run: a create for a new CRD, the delete of an
// always-replace, an update otherwise. A refusal is an apiserverRejects
// finding, except that an update with fallback-on-replace that is refused
// as invalid (422) is not refused for kapp: it replaces the CRD, and the
// returned replace says why. Any other error (the apiserver did not answer,
// a conflict, 5xx) is returned, naming the CRD.
func dryRunFindings(ctx context.Context, p Pair, cfg *config.CRDUpgradeSafety,
	cluster Cluster) (findings []crdupgradesafety.Finding, replace string, err error) {

	verb := VerbUpdate
	switch {
	case p.Old == nil:
		verb = VerbCreate
	case p.Strategy == StrategyAlwaysReplace:
		verb = VerbDelete
	}
	sendErr := cluster.DryRun(ctx, verb, p.Send)
	if sendErr == nil {
		return nil, "", nil
	}
	rs, ok := refusal(sendErr)
	if !ok {
		if de := deadlineError(ctx, sendErr, ""); de != nil {
			sendErr = de
		}
		return nil, "", fmt.Errorf("server-side dry run of the %s of CRD %s: %w", verb, p.New.Name, sendErr)
	}
	if verb == VerbUpdate && p.Strategy == StrategyFallbackOnReplace && apierrors.IsInvalid(sendErr) {
		return nil, fmt.Sprintf("update strategy %s, and the apiserver refuses the update (server-side dry run: %s)",
			StrategyFallbackOnReplace, describe(rs)), nil
	}
	return crdupgradesafety.Rejected(p.New.Name, string(verb)+" (server-side dry run)", rs, cfg), "", nil
}

// refusal reports whether err is the apiserver refusing a request it
// understood (validation, admission webhooks and policies, authorization:
// status 400, 403, 413 or 422), as opposed to failing to answer it or a
// state that may pass on a retry (conflict, not found, too many requests,
// 5xx), and returns its reasons: the status causes when they carry a
// message, else the status message.
func refusal(err error) ([]crdupgradesafety.Rejection, bool) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return nil, false
	}
	s := st.Status()
	switch s.Code {
	case 400, 403, 413, 422:
	default:
		return nil, false
	}
	// A webhook that cannot run without side effects makes the dry run
	// fail, not the request: the dry run cannot tell.
	if strings.Contains(s.Message, "does not support dry run") {
		return nil, false
	}
	var rs []crdupgradesafety.Rejection
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message != "" {
				rs = append(rs, crdupgradesafety.Rejection{Field: c.Field, Message: c.Message})
			}
		}
	}
	if len(rs) == 0 {
		rs = []crdupgradesafety.Rejection{{Message: s.Message}}
	}
	return rs, true
}

// existingResourceFindings validates the existing custom resources of an
// updated CRD under the new schema, read at every version the old CRD serves
// and the new CRD still has (objects come back converted to the version
// asked for, so each such version's new schema gets checked).
func existingResourceFindings(ctx context.Context, pair Pair, cfg *config.CRDUpgradeSafety,
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

func removalFindings(ctx context.Context, r Removal, cfg *config.CRDUpgradeSafety,
	cluster Cluster) ([]crdupgradesafety.Finding, error) {

	n, err := cluster.CountCustomResources(ctx, r.CRD)
	if de := deadlineError(ctx, err, ""); de != nil {
		return nil, fmt.Errorf("counting custom resources of CRD %s: %w", r.CRD.Name, de)
	}
	if err != nil {
		return nil, fmt.Errorf("checking deletion of CRD %s: %w", r.CRD.Name, err)
	}
	return crdupgradesafety.Deletion(r.CRD.Name, n-r.AlsoDeleted, cfg), nil
}

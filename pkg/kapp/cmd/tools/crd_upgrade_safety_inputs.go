package tools

import (
	"errors"
	"fmt"
	"os"
	"strings"

	ctlconf "carvel.dev/kapp/pkg/kapp/config"
	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/preflight"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The input assembly of `kapp tools crd-upgrade-safety`: the file flags
// checked, the new CRDs and each old side (the --file inputs, each
// --git-ref baseline, or the cluster) loaded, the kapp Config applied,
// and one evaluation.Request per old side (requestFor).

// ErrNoCRDs is returned when the old (--file) or new (--file2) inputs hold
// no CRD to check.
var ErrNoCRDs = errors.New("no CRDs to check")

// runInputs is what a run compares: the new CRDs, the old sides, the
// check's settings.
type runInputs struct {
	newSet inputs.Set
	sides  []oldSide
	cfg    config.Settings
	// oldFromFiles: the old CRDs come from files or git, not the cluster.
	oldFromFiles bool
}

// oldSide is one set of old CRDs the new ones are compared with: the
// --file inputs, the --file2 paths at one --git-ref baseline, or (set
// empty, baseline nil) the cluster.
type oldSide struct {
	set      inputs.Set
	baseline *finding.Baseline
}

// checkFileFlags checks the file flags that need no input read.
func (o *CRDUpgradeSafetyOptions) checkFileFlags() error {
	ff := o.FileFlags
	if len(ff.NewFiles) == 0 {
		return fmt.Errorf("expected at least one --file2 with the new CRDs")
	}
	if len(ff.GitRefs) > 0 && len(ff.OldFiles) > 0 {
		return fmt.Errorf("expected either --file or --git-ref for the old CRDs, not both (--git-ref reads the --file2 paths at that revision)")
	}
	if ff.GitRefTip && len(ff.GitRefs) == 0 {
		return fmt.Errorf("expected --git-ref-tip with --git-ref: it says which commit of each --git-ref revision the old CRDs are read at")
	}
	if ff.GitStaged && len(ff.GitRefs) == 0 && len(ff.OldFiles) == 0 {
		return fmt.Errorf("expected --git-staged with --git-ref (e.g. --git-ref HEAD: what the next commit changes) or --file")
	}
	if cf := o.ConversionFlags; cf.WebhookCAFile != "" && cf.WebhookURL == "" {
		return fmt.Errorf("expected --conversion-webhook-ca-file with --conversion-webhook-url: it verifies that webhook's certificate")
	}
	if u := o.ConversionFlags.WebhookURL; u != "" && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("--conversion-webhook-url %q: the apiserver calls conversion webhooks over https only", u)
	}
	if stdinCount(ff.OldFiles)+stdinCount(ff.NewFiles) > 1 {
		return fmt.Errorf("expected standard input (-) at most once among --file and --file2")
	}
	return nil
}

// assembleInputs checks the file flags, reads the inputs and the kapp
// Config among the new ones, and checks the flags that depend on where
// the old CRDs come from.
func (o *CRDUpgradeSafetyOptions) assembleInputs() (runInputs, error) {
	if err := o.checkFileFlags(); err != nil {
		return runInputs{}, err
	}
	ff := o.FileFlags
	newSet, sides, err := o.load()
	if err != nil {
		return runInputs{}, err
	}
	// No CRD on a side is most likely the wrong folder or an empty file:
	// passing would hide it in CI.
	if len(newSet.CRDs) == 0 {
		return runInputs{}, noCRDsError("--file2", ff.NewFiles)
	}
	if len(ff.OldFiles) > 0 && len(sides[0].set.CRDs) == 0 {
		return runInputs{}, noCRDsError("--file", ff.OldFiles)
	}
	cfg, err := o.config(newSet.Configs)
	if err != nil {
		return runInputs{}, err
	}
	if o.KubeVersion != "" {
		if cfg.KubeVersion, err = config.ParseKubeVersion(o.KubeVersion); err != nil {
			return runInputs{}, fmt.Errorf("--kube-version: %w", err)
		}
	}
	in := runInputs{newSet: newSet, sides: sides, cfg: cfg, oldFromFiles: len(ff.OldFiles) > 0 || len(ff.GitRefs) > 0}
	if in.oldFromFiles {
		if cfg.UnaffectedEnforcement == config.EnforcementWarn && len(ff.Objects) == 0 {
			o.notef("unaffectedEnforcement Warn changes nothing here: no objects are read without a cluster or --objects")
		}
		return in, nil
	}
	if len(ff.Objects) > 0 {
		return runInputs{}, fmt.Errorf("expected --objects with --file or --git-ref: against the cluster, its stored objects are read")
	}
	if o.KubeVersion != "" {
		return runInputs{}, fmt.Errorf("expected --kube-version with --file or --git-ref: against the cluster, its apiserver's version is judged for")
	}
	return in, nil
}

// requestFor is the evaluation of the new CRDs against one old side: the
// pairs with their update strategies, and the old CRDs of the files (with
// --objects samples) or the cluster (with progress lines).
func (o *CRDUpgradeSafetyOptions) requestFor(in *runInputs, side oldSide) (evaluation.Request, error) {
	plan := evaluation.Plan{Pairs: make([]evaluation.Pair, len(in.newSet.CRDs)), OldFromFiles: in.oldFromFiles}
	for i, c := range in.newSet.CRDs {
		plan.Pairs[i].New = c.CRD
		var err error
		if plan.Pairs[i].Strategy, err = evaluation.UpdateStrategyOf(c.CRD, o.DefaultUpdateStrategy); err != nil {
			return evaluation.Request{}, fmt.Errorf("%s: %w", c.Origin, err)
		}
	}
	if cf := o.ConversionFlags; cf.WebhookURL != "" {
		plan.Conversion.URL = cf.WebhookURL
		if cf.WebhookCAFile != "" {
			ca, err := os.ReadFile(cf.WebhookCAFile)
			if err != nil {
				return evaluation.Request{}, fmt.Errorf("--conversion-webhook-ca-file: %w", err)
			}
			plan.Conversion.CABundle = ca
		}
	}
	req := evaluation.Request{Plan: plan, Settings: &in.cfg, ProgressInterval: o.progressInterval}
	if in.oldFromFiles {
		pairFiles(&req.Plan, side.set.CRDs)
		if err := o.addSamples(&req.Plan); err != nil {
			return evaluation.Request{}, err
		}
		return req, nil
	}
	req.Cluster, req.AllOldFromCluster = o.cluster, true
	// Progress of long live checks; not in kapp's --json document.
	if !o.GlobalJSON {
		req.Progressf = o.ui.PrintLinef
		if o.Output != OutputTable {
			req.Progressf = o.notef
		}
	}
	return req, nil
}

func noCRDsError(flag string, files []string) error {
	return fmt.Errorf("%w: the %s inputs (%s) hold no %s CustomResourceDefinition",
		ErrNoCRDs, flag, strings.Join(files, ", "), apiextv1.SchemeGroupVersion.String())
}

// pairFiles gives each new CRD of the plan its old CRD from the old files,
// and makes every old CRD that no new one replaces a removal: kapp deletes
// the resources a release no longer ships.
func pairFiles(plan *evaluation.Plan, old []inputs.CRD) {
	oldByName := make(map[string]*apiextv1.CustomResourceDefinition, len(old))
	for _, c := range old {
		oldByName[c.CRD.Name] = c.CRD
	}
	for i := range plan.Pairs {
		name := plan.Pairs[i].New.Name
		plan.Pairs[i].Old = oldByName[name]
		delete(oldByName, name)
	}
	for _, c := range old { // input order
		if crd, ok := oldByName[c.CRD.Name]; ok {
			plan.Removals = append(plan.Removals, evaluation.Removal{CRD: crd})
		}
	}
}

// load reads the new and the old inputs (one side per --git-ref; one with
// nothing for the cluster), the files decoded together where they can be
// (see inputs.LoadPair), and sets the garbage collector's target for
// their size.
func (o *CRDUpgradeSafetyOptions) load() (newSet inputs.Set, sides []oldSide, err error) {
	ff := o.FileFlags
	if len(ff.GitRefs) == 0 && !ff.GitStaged {
		oldSet, newSet, err := inputs.LoadPair(ff.OldFiles, ff.NewFiles, tuneGC)
		return newSet, []oldSide{{set: oldSet}}, err
	}
	// The old sides depend on the new one: CRDs missing at a revision
	// are looked for by name.
	if ff.GitStaged {
		newSet, err = inputs.LoadGitStaged(ff.NewFiles)
	} else {
		_, newSet, err = inputs.LoadPair(nil, ff.NewFiles, func(n int) {
			// Each old side, read at a revision, is about as large.
			tuneGC((1 + len(ff.GitRefs)) * n)
		})
	}
	if err != nil {
		return inputs.Set{}, nil, err
	}
	if len(ff.GitRefs) == 0 { // --git-staged with --file
		oldSet, err := inputs.Load(ff.OldFiles, "old")
		if err != nil {
			return inputs.Set{}, nil, fmt.Errorf("old CRDs: %w", err)
		}
		return newSet, []oldSide{{set: oldSet}}, nil
	}
	read := map[string]string{} // commit: the revision read there
	for _, ref := range ff.GitRefs {
		oldSet, b, err := inputs.LoadGitRef(ref, ff.GitRefTip, ff.NewFiles, newSet, o.notef)
		if err != nil {
			return inputs.Set{}, nil, err
		}
		if prev, dup := read[b.Commit]; dup {
			o.notef("--git-ref %s: the same commit as --git-ref %s (%s), compared once", ref, prev, b.Commit)
			continue
		}
		read[b.Commit] = ref
		sides = append(sides, oldSide{set: oldSet, baseline: &finding.Baseline{Ref: b.Ref, Commit: b.Commit, MergeBase: b.MergeBase}})
	}
	return newSet, sides, nil
}

// config applies the kapp Config resources as `kapp deploy` does: through
// a preflight registry, so unknown or duplicate preflightRules entries fail
// the same way and the CRDUpgradeSafety entry is decoded by the check.
func (o *CRDUpgradeSafetyOptions) config(configRs []ctlres.Resource) (config.Settings, error) {
	_, conf, err := ctlconf.NewConfFromResources(configRs)
	if err != nil {
		return config.Settings{}, fmt.Errorf("reading kapp config: %w", err)
	}
	check := preflight.NewCRDUpgradeSafety(o.ui, nil, true)
	if err := preflight.NewRegistryWith(o.depsFactory, check).SetConfig(conf.PreflightRules()); err != nil {
		return config.Settings{}, fmt.Errorf("preflight configuration settings failed: %w", err)
	}
	return check.Config(), nil
}

func (o *CRDUpgradeSafetyOptions) cluster() (evaluation.Cluster, error) {
	if o.Cluster != nil {
		return o.Cluster()
	}
	return preflight.ClusterFromDeps(o.depsFactory)()
}

// stdinCount counts the standard inputs (-) among files.
func stdinCount(files []string) int {
	n := 0
	for _, f := range files {
		if f == "-" {
			n++
		}
	}
	return n
}

package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	cmdapp "carvel.dev/kapp/pkg/kapp/cmd/app"
	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	ctlconf "carvel.dev/kapp/pkg/kapp/config"
	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/cppforlife/go-cli-ui/ui"
	uitable "github.com/cppforlife/go-cli-ui/ui/table"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/preflight"
	"github.com/spf13/cobra"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// UnsafeExitStatus is the exit status when a CRD change has an error finding.
const UnsafeExitStatus = 3

// exitStatusError gives err, an *evaluation.UnsafeUpgradeError, the exit
// status UnsafeExitStatus (kapp's cmd/app.ExitStatus). Its text is err's.
type exitStatusError struct {
	err    error
	status int
}

func (e exitStatusError) Error() string   { return e.err.Error() }
func (e exitStatusError) Unwrap() error   { return e.err }
func (e exitStatusError) ExitStatus() int { return e.status }

// CRDUpgradeSafetyFileFlags are the inputs: old CRDs (--file, or --git-ref,
// optional) and new CRDs (--file2). kapp's tools.FileFlags is not reused:
// its --sort flag means nothing here and its help text does not say which
// side is which.
type CRDUpgradeSafetyFileFlags struct {
	OldFiles []string
	NewFiles []string
	// GitRefs: the old CRDs are the NewFiles paths at each of these git
	// revisions (each a baseline, compared with in turn): at the merge
	// base of the revision and HEAD, or with GitRefTip at the revision.
	GitRefs   []string
	GitRefTip bool
	// GitStaged: the new CRDs are the NewFiles paths as staged in git's
	// index (a pre-commit hook), not as they are on disk.
	GitStaged bool
	// Objects: files or directories of sample custom resources, read as
	// stored objects when there is no cluster.
	Objects []string
}

func (s *CRDUpgradeSafetyFileFlags) Set(cmd *cobra.Command) {
	cmd.Flags().StringSliceVarP(&s.OldFiles, "file", "f", nil,
		"Set file with the old CRDs (format: /tmp/foo, https://..., -) (can repeat); without it (or --git-ref) the old CRDs are read from the cluster")
	cmd.Flags().StringSliceVar(&s.NewFiles, "file2", nil,
		"Set file with the new CRDs and any kapp Config (format: /tmp/foo, https://..., -) (can repeat)")
	// Not a slice flag: a git revision may hold a comma.
	cmd.Flags().StringArrayVar(&s.GitRefs, "git-ref", nil,
		"Set git revision (e.g. origin/main) whose --file2 paths hold the old CRDs, read at its merge base with HEAD (what a pull request changes); "+
			"CRDs whose file moved are found by name (can repeat: each is a baseline compared with, e.g. the last two release tags)")
	cmd.Flags().BoolVar(&s.GitRefTip, "git-ref-tip", false,
		"Read the old CRDs at each --git-ref revision itself, not at its merge base with HEAD (also reports what the revision changed since HEAD branched off it)")
	cmd.Flags().BoolVar(&s.GitStaged, "git-staged", false,
		"Read the new CRDs from the --file2 paths as staged in git's index, not as they are on disk (a pre-commit hook: --git-ref HEAD --git-staged)")
	cmd.Flags().StringSliceVar(&s.Objects, "objects", nil,
		"Set file or directory of sample custom resources (e.g. config/samples/) to read as stored objects, with --file or --git-ref (from the working tree) (can repeat)")
}

type CRDUpgradeSafetyOptions struct {
	ui          ui.UI
	depsFactory cmdcore.DepsFactory

	FileFlags CRDUpgradeSafetyFileFlags
	// Output is one of table, markdown, github, sarif, json.
	Output string
	// OutputFiles are more outputs of the run, "KIND=PATH" each.
	OutputFiles []string
	// GlobalJSON: kapp's global --json is on (the JSON form of the table
	// output).
	GlobalJSON bool
	// DefaultUpdateStrategy is the update strategy of CRDs without a
	// kapp.k14s.io/update-strategy annotation, as kapp deploy's
	// --apply-default-update-strategy.
	DefaultUpdateStrategy string
	// KubeVersion is the Kubernetes version an offline run judges for
	// (--kube-version: 1.35, 1.36 or 1.37; "" the newest). A run against
	// the cluster judges for the apiserver's version.
	KubeVersion string

	// Cluster reaches the live cluster when no --file is given; nil uses
	// the dynamic client of depsFactory.
	Cluster func() (evaluation.Cluster, error)
	// progressInterval throttles the progress lines of the live checks.
	progressInterval time.Duration
}

func NewCRDUpgradeSafetyOptions(ui ui.UI, depsFactory cmdcore.DepsFactory) *CRDUpgradeSafetyOptions {
	return &CRDUpgradeSafetyOptions{ui: ui, depsFactory: depsFactory, progressInterval: evaluation.ProgressInterval}
}

func NewCRDUpgradeSafetyCmd(o *CRDUpgradeSafetyOptions, _ cmdcore.FlagsFactory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "crd-upgrade-safety",
		Short: "Check that CRD changes are safe for existing data and clients",
		Long: `Check that CRD changes are safe for existing data and clients, the way the
CRDUpgradeSafety preflight check of 'kapp deploy --preflight=CRDUpgradeSafety' does,
without deploying anything.

Old CRDs come from --file; or, with --git-ref REV, from the --file2 paths as
they are at the merge base of REV and HEAD, what a pull request changes
(--git-ref-tip: at REV itself; CRDs whose file moved are found by name in the
whole tree there; --git-ref may be given several times, e.g. the last two
release tags: the new CRDs are compared with each, and every finding names
its baseline); or from the cluster when neither is given (then the live
checks run too: existing custom resources must stay valid under the new
schema, and a CRD kapp would replace, per its kapp.k14s.io/update-strategy or
--apply-default-update-strategy, must have none to lose). New CRDs come from
--file2 (--git-staged: as staged in git's index); each is validated as the
apiserver would validate it (apiserverRejects),
and an old CRD from --file that the apiserver would refuse gives a warning.

Inputs may be whole manifests: documents that are not CustomResourceDefinitions
are ignored, CRDs only in the new inputs are new (nothing to compare). A CRD only
in the old inputs is a crdDeletion finding: the new release no longer ships it,
so deploying it with kapp would delete the CRD with all its custom resources.
Old or new inputs that hold no CRD at all are an error (most likely the wrong
folder).

Where the apiserver's judgement differs by Kubernetes version (1.37 enforces the
ranges of the numeric formats int32 and float, 1.35 and 1.36 ignore them), a run
against the cluster judges as its apiserver's version; an offline run judges for
--kube-version (1.35, 1.36 or 1.37; default 1.37, the newest supported). Such a
finding names the version it holds from and the version judged for.

A kapp Config (apiVersion: kapp.k14s.io/v1alpha1, kind: Config) among the new
inputs configures the check through its preflightRules entry named
CRDUpgradeSafety, as it does for 'kapp deploy'; Config documents among the old
inputs are ignored.

--output chooses the form: table (kapp's table, the default; --json gives it
as kapp's JSON document), markdown (a pull-request comment), github (GitHub
Actions annotations on the file and line of each finding), sarif (SARIF 2.1.0
for code scanning) or json (the findings document of
docs/crd-upgrade-safety-report.schema.json). The table shortens long messages;
the other outputs print them in full. --output-file KIND=PATH (can repeat)
writes more outputs of the same run to files.

Exit status (the same in every output):
  0  no error findings (warnings allowed)
  1  the check could not run (bad input or config, cluster not reachable or
     not answering within liveChecksTimeout)
  3  at least one error finding: the upgrade is unsafe`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f := cmd.Flags().Lookup("json"); f != nil && f.Value.String() == "true" {
				o.GlobalJSON = true
			}
			if o.Output != OutputTable {
				if cmd.Annotations == nil {
					cmd.Annotations = map[string]string{}
				}
				cmd.Annotations[DocumentOutputAnnotation] = ""
			}
			return o.Run()
		},
		// Human-readable output (title, headers, summary) by default, as for
		// deploy: the command mostly runs in CI logs. --tty=false prints the
		// rows only; --json is for machines.
		Annotations: map[string]string{cmdapp.TTYByDefaultKey: ""},
		Example: `
  # Compare two releases of an operator's CRDs, no cluster needed
  kapp tools crd-upgrade-safety -f release-1.0/crds/ --file2 release-1.1/crds/

  # Compare new CRDs with the ones on the cluster (and read their stored objects)
  kapp tools crd-upgrade-safety --file2 release-1.1/crds/

  # A pull-request check: the CRDs of the branch against those of origin/main,
  # as annotations on the diff
  kapp tools crd-upgrade-safety --git-ref origin/main --file2 config/crds/ --output github

  # Against the last two releases: every version users may upgrade from
  kapp tools crd-upgrade-safety --git-ref v1.1.0 --git-ref v1.2.0 --file2 config/crds/

  # One run, three outputs: annotations, a job summary and SARIF
  kapp tools crd-upgrade-safety --git-ref origin/main --file2 config/crds/ --output github \
    --output-file markdown=summary.md --output-file sarif=crd-upgrade-safety.sarif

  # A pre-commit hook: the staged CRDs against HEAD
  kapp tools crd-upgrade-safety --git-ref HEAD --git-staged --file2 config/crds/

  # What each finding would do to data: sample custom resources read as stored objects
  kapp tools crd-upgrade-safety --git-ref origin/main --file2 config/crds/ --objects config/samples/

  # Findings for code scanning, or as a JSON document
  kapp tools crd-upgrade-safety -f old.yaml --file2 new.yaml --output sarif > crd-upgrade-safety.sarif
  kapp tools crd-upgrade-safety -f old.yaml --file2 new.yaml --output json

  # Judge for the cluster the CRDs will go to, where that matters (numeric formats)
  kapp tools crd-upgrade-safety -f old.yaml --file2 new.yaml --kube-version 1.35`,
	}
	o.FileFlags.Set(cmd)
	cmd.Flags().StringVar(&o.Output, "output", OutputTable,
		"Set output format ("+strings.Join(outputs, ", ")+")")
	cmd.Flags().StringArrayVar(&o.OutputFiles, "output-file", nil,
		"Set another output of the same run, written to a file (format: KIND=PATH, KIND one of "+strings.Join(outputs, ", ")+") (can repeat)")
	cmd.Flags().StringVar(&o.DefaultUpdateStrategy, "apply-default-update-strategy", "",
		"Set the update strategy kapp deploy uses for CRDs without a kapp.k14s.io/update-strategy annotation, as its flag of the same name "+
			"(always-replace and fallback-on-replace delete and recreate CRDs)")
	cmd.Flags().StringVar(&o.KubeVersion, "kube-version", "",
		"Set Kubernetes version to judge for offline, where the verdict depends on it ("+supportedKubeVersions()+"; default "+
			config.DefaultKubeVersion.String()+"); against the cluster, its apiserver's version")
	return cmd
}

// supportedKubeVersions lists the values --kube-version takes.
func supportedKubeVersions() string {
	vs := make([]string, len(config.SupportedKubeVersions))
	for i, v := range config.SupportedKubeVersions {
		vs[i] = v.String()
	}
	return strings.Join(vs, ", ")
}

// ErrNoCRDs is returned when the old (--file) or new (--file2) inputs hold
// no CRD to check.
var ErrNoCRDs = errors.New("no CRDs to check")

// GCPercentFor is the garbage collector's target (as GOGC) for inputs of
// n bytes (old and new files) while the command runs; a GOGC in the
// environment wins. Decoding and validating CRDs allocates several times
// their size in short-lived objects, and the apiserver's validation (CEL
// compilation above all) many times more:
//
//   - from hugeInput (64 MiB) on, Go's default with a soft memory limit of
//     MemoryLimitFor(n) (7x the input): the heap grows freely below the
//     limit, and the collector works harder only near it. On 300 real CRDs
//     (105 MiB of input, hack/bench-offline.sh) a fixed target of 25 made
//     collections half of the command's CPU (15.2 s, against 7.8 s with
//     the limit);
//   - from largeInput on, 25: the heap stays within 1.25x its live data.
//     At Go's default the peak resident memory reached 14x the input on a
//     20 MB CRD pair and 12x on prometheus-operator's CRDs; at 25 about 8x
//     and 9x (hack/bench-memory.sh). A memory limit does not do for these:
//     the binary's own 45 MiB is most of 8x their size;
//   - below smallInput (a CI run on a few CRDs), 400: the heap is small
//     beside the binary's own memory, and collections were half the time
//     of the whole command on one large CRD pair (hack/bench.sh, "Whole
//     command");
//   - in between, Go's default.
//
// Tuned last: the decoding and the validations were made lean first.
func GCPercentFor(n int) int {
	switch {
	case n < smallInput:
		return 400
	case n < largeInput:
		return 100
	case n < hugeInput:
		return 25
	default:
		return 100
	}
}

// MemoryLimitFor is the garbage collector's soft memory limit (as
// GOMEMLIMIT) for inputs of n bytes while the command runs; 0 for none. A
// GOMEMLIMIT in the environment wins.
func MemoryLimitFor(n int) int64 {
	if n < hugeInput {
		return 0
	}
	return 7 * int64(n)
}

// smallInput and largeInput bound the input sizes (old and new files) of
// GCPercentFor's targets.
const (
	smallInput = 2 << 20
	largeInput = 4 << 20
	hugeInput  = 64 << 20
)

// tuneGC sets the garbage collector's target for inputs of n bytes, unless
// GOGC is set; Run restores the previous target.
func tuneGC(n int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercentFor(n))
	}
	if limit := MemoryLimitFor(n); limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
}

func (o *CRDUpgradeSafetyOptions) Run() error {
	if os.Getenv("GOGC") == "" {
		// load sets the target once it knows the size of the inputs.
		defer debug.SetGCPercent(debug.SetGCPercent(GCPercentFor(0)))
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // the caller's limit again afterwards
	ctx := context.Background()
	if o.Output == "" {
		o.Output = OutputTable
	}
	files, err := o.checkOutput()
	if err != nil {
		return err
	}
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
	if stdinCount(ff.OldFiles)+stdinCount(ff.NewFiles) > 1 {
		return fmt.Errorf("expected standard input (-) at most once among --file and --file2")
	}

	newSet, sides, err := o.load()
	if err != nil {
		return err
	}
	// No CRD on a side is most likely the wrong folder or an empty file:
	// passing would hide it in CI.
	if len(newSet.CRDs) == 0 {
		return noCRDsError("--file2", ff.NewFiles)
	}
	if len(ff.OldFiles) > 0 && len(sides[0].set.CRDs) == 0 {
		return noCRDsError("--file", ff.OldFiles)
	}
	cfg, err := o.config(newSet.Configs)
	if err != nil {
		return err
	}
	if o.KubeVersion != "" {
		if cfg.KubeVersion, err = config.ParseKubeVersion(o.KubeVersion); err != nil {
			return fmt.Errorf("--kube-version: %w", err)
		}
	}

	oldFromFiles := len(ff.OldFiles) > 0 || len(ff.GitRefs) > 0
	if oldFromFiles {
		if cfg.UnaffectedEnforcement == config.EnforcementWarn && len(ff.Objects) == 0 {
			o.notef("unaffectedEnforcement Warn changes nothing here: no objects are read without a cluster or --objects")
		}
	} else {
		if len(ff.Objects) > 0 {
			return fmt.Errorf("expected --objects with --file or --git-ref: against the cluster, its stored objects are read")
		}
		if o.KubeVersion != "" {
			return fmt.Errorf("expected --kube-version with --file or --git-ref: against the cluster, its apiserver's version is judged for")
		}
	}

	// Each old side (the --file inputs, each --git-ref baseline, or the
	// cluster) is compared with the new CRDs in turn.
	var findings []finding.Finding
	var checked []string
	seen := map[string]bool{}
	check := func(name string) {
		if !seen[name] {
			seen[name] = true
			checked = append(checked, name)
		}
	}
	for _, side := range sides {
		plan := evaluation.Plan{Pairs: make([]evaluation.Pair, len(newSet.CRDs)), OldFromFiles: oldFromFiles}
		for i, c := range newSet.CRDs {
			plan.Pairs[i].New = c.CRD
			if plan.Pairs[i].Strategy, err = evaluation.UpdateStrategyOf(c.CRD, o.DefaultUpdateStrategy); err != nil {
				return fmt.Errorf("%s: %w", c.Origin, err)
			}
		}
		req := evaluation.Request{Plan: plan, Settings: &cfg, ProgressInterval: o.progressInterval}
		if oldFromFiles {
			pairFiles(&req.Plan, side.set.CRDs)
			if err := o.addSamples(&req.Plan); err != nil {
				return err
			}
		} else {
			req.Cluster, req.AllOldFromCluster = o.cluster, true
			// Progress of long live checks; not in kapp's --json document.
			if !o.GlobalJSON {
				req.Progressf = o.ui.PrintLinef
				if o.Output != OutputTable {
					req.Progressf = o.notef
				}
			}
		}
		res, err := evaluation.Run(ctx, req)
		if err != nil {
			if side.baseline != nil && len(sides) > 1 {
				return fmt.Errorf("against %s: %w", side.baseline.Ref, err)
			}
			return err
		}
		for _, f := range res.Findings {
			f.Baseline = side.baseline
			findings = append(findings, f)
		}
		for _, p := range req.Plan.Pairs {
			check(p.New.Name)
		}
		for _, r := range req.Plan.Removals {
			check(r.CRD.Name)
		}
	}
	// Each side's findings come sorted; the sort is stable, so findings
	// alike from several baselines keep the baselines' order.
	finding.SortFindings(findings)

	if err := o.printReports(files, checked, findings, cfg.MaxFindingsPerCRD, newSet.CRDs, sides); err != nil {
		return err
	}

	if err := (evaluation.Result{Findings: findings}).Err(); err != nil {
		return exitStatusError{err: err, status: UnsafeExitStatus}
	}
	return nil
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

// oldSide is one set of old CRDs the new ones are compared with: the
// --file inputs, the --file2 paths at one --git-ref baseline, or (set
// empty, baseline nil) the cluster.
type oldSide struct {
	set      inputs.Set
	baseline *finding.Baseline
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

// printTable prints a table of what (e.g. "findings"). go-cli-ui panics on a --column naming no
// header; that is bad input, reported as an error here.
func printTable(u ui.UI, what string, table uitable.Table) (err error) {
	defer func() {
		if r := recover(); r != nil {
			keys := make([]string, len(table.Header))
			for i, h := range table.Header {
				keys[i] = h.Key
			}
			err = fmt.Errorf("printing %s: %v (columns: %s)", what, r, strings.Join(keys, ", "))
		}
	}()
	u.PrintTable(table)
	return nil
}

// notef prints a note on how the run went (standard error: standard
// output may be a document).
func (o *CRDUpgradeSafetyOptions) notef(format string, args ...any) {
	o.ui.ErrorLinef(format, args...)
}

func (o *CRDUpgradeSafetyOptions) cluster() (evaluation.Cluster, error) {
	if o.Cluster != nil {
		return o.Cluster()
	}
	return preflight.ClusterFromDeps(o.depsFactory)()
}

func stdinCount(files []string) int {
	n := 0
	for _, f := range files {
		if f == "-" {
			n++
		}
	}
	return n
}

package tools

import (
	"context"
	"fmt"
	"time"

	cmdapp "carvel.dev/kapp/pkg/kapp/cmd/app"
	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/spf13/cobra"
)

type CRDUpgradeSafetyOptions struct {
	ui          ui.UI
	depsFactory cmdcore.DepsFactory

	FileFlags       CRDUpgradeSafetyFileFlags
	ConversionFlags CRDUpgradeSafetyConversionFlags
	CRDUpgradeSafetyFlags
	// GlobalJSON: kapp's global --json is on (the JSON form of the table
	// output).
	GlobalJSON bool

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
  kapp tools crd-upgrade-safety -f old.yaml --file2 new.yaml --kube-version 1.35

  # The conversion webhook of this release, run locally, against the sample objects
  kapp tools crd-upgrade-safety --git-ref origin/main --file2 config/crds/ --objects config/samples/ \
    --conversion-webhook-url https://127.0.0.1:9443/convert --conversion-webhook-ca-file tls/ca.crt`,
	}
	o.FileFlags.Set(cmd)
	o.ConversionFlags.Set(cmd)
	o.CRDUpgradeSafetyFlags.Set(cmd)
	return cmd
}

// Run checks the flags, assembles the inputs, compares the new CRDs with
// each old side, prints the reports and maps the findings to the exit
// status.
func (o *CRDUpgradeSafetyOptions) Run() error {
	defer startGC()() // the caller's garbage collector settings again afterwards
	if o.Output == "" {
		o.Output = OutputTable
	}
	files, err := o.checkOutput()
	if err != nil {
		return err
	}
	in, err := o.assembleInputs()
	if err != nil {
		return err
	}
	checked, findings, err := o.compare(context.Background(), &in)
	if err != nil {
		return err
	}
	if err := o.printReports(files, checked, findings, in.cfg.MaxFindingsPerCRD, in.newSet.CRDs, in.sides); err != nil {
		return err
	}
	return exitStatusOf(findings)
}

// compare evaluates the new CRDs against each old side (the --file inputs,
// each --git-ref baseline, or the cluster) in turn, and returns the names
// of the CRDs checked and every finding, sorted, each with its baseline.
func (o *CRDUpgradeSafetyOptions) compare(ctx context.Context, in *runInputs) (checked []string, findings []finding.Finding, err error) {
	seen := map[string]bool{}
	check := func(name string) {
		if !seen[name] {
			seen[name] = true
			checked = append(checked, name)
		}
	}
	for _, side := range in.sides {
		req, err := o.requestFor(in, side)
		if err != nil {
			return nil, nil, err
		}
		res, err := evaluation.Run(ctx, req)
		if err != nil {
			if side.baseline != nil && len(in.sides) > 1 {
				return nil, nil, fmt.Errorf("against %s: %w", side.baseline.Ref, err)
			}
			return nil, nil, err
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
	return checked, findings, nil
}

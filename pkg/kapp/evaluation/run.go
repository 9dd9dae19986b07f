package evaluation

import (
	"context"
	"fmt"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// Request is one run of the evaluation service: what the kapp hook, the
// tools command and the webhook each hand to Run.
type Request struct {
	// Plan is what the run checks. Run sets its Progress.
	Plan Plan
	// Settings are the check's settings (the waivers of the plan's CRDs
	// are added to a copy).
	Settings *config.Settings

	// Cluster returns the cluster, called at most once: always when
	// AlwaysLive is set or old sides are to be read from the cluster,
	// otherwise only when the plan needs the cluster (NeedsCluster). nil:
	// the run reads no cluster (the old CRDs come from files).
	Cluster func() (Cluster, error)
	// AlwaysLive: the live checks run whenever there is a Cluster, not
	// only when the plan needs them (the webhook).
	AlwaysLive bool
	// OldFromCluster lists the pairs (indexes into Plan.Pairs) whose old
	// side is the live CRD, read before the evaluation (FillOld); with
	// AllOldFromCluster, every pair's is.
	OldFromCluster    []int
	AllOldFromCluster bool

	// Progressf, when set, prints the progress of the live checks
	// (ProgressPrinter), at most every ProgressInterval.
	Progressf        func(format string, args ...any)
	ProgressInterval time.Duration
}

// Result is what a run found.
type Result struct {
	// Findings are every finding, sorted (finding.SortFindings).
	Findings []finding.Finding
	// Live says the run read the cluster.
	Live bool

	maxPerCRD int
}

// Run evaluates one request: it bounds every wait on the cluster by the
// settings' liveChecksTimeout (WithLiveDeadline), reaches the cluster if
// the request needs it, fills the old sides of the plan from the live
// CRDs, reports the progress of the live checks and evaluates the plan
// (Evaluate). An error means the run could not judge the plan: a deploy
// and the tools command fail (config.FailRunUnfinished), the webhook
// asks failMode (config.FailWebhookReviewUnfinished); unsafe findings are
// not an error here: see Result.Err.
func Run(ctx context.Context, req Request) (Result, error) {
	cfg := req.Settings
	res := Result{maxPerCRD: cfg.MaxFindingsPerCRD}
	plan := req.Plan
	if len(plan.Pairs) == 0 && len(plan.Removals) == 0 {
		return res, nil
	}
	if d := cfg.LiveChecksTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = WithLiveDeadline(ctx, d)
		defer cancel()
	}

	fill := req.OldFromCluster
	if req.AllOldFromCluster {
		fill = nil // every pair
	}
	fetch := req.AllOldFromCluster || len(req.OldFromCluster) > 0
	var cluster Cluster
	if req.Cluster != nil && (req.AlwaysLive || fetch || NeedsCluster(plan, cfg)) {
		var err error
		if cluster, err = req.Cluster(); err != nil {
			return res, err
		}
	}
	if cluster != nil {
		var err error
		if cfg, err = judgedForServer(ctx, cfg, cluster); err != nil {
			return res, err
		}
	}
	if fetch {
		if err := FillOld(ctx, &plan, fill, cluster); err != nil {
			return res, err
		}
	}

	var progress *ProgressPrinter
	if cluster != nil && req.Progressf != nil {
		progress = NewProgressPrinter(req.Progressf, req.ProgressInterval)
		plan.Progress = progress.Update
	}
	findings, err := Evaluate(ctx, plan, cfg, cluster)
	progress.Done()
	if err != nil {
		return res, err
	}
	res.Findings, res.Live = findings, cluster != nil
	return res, nil
}

// judgedForServer returns cfg judging for the apiserver's version (a
// copy; cfg is shared): a live run judges as the cluster in front of it
// validates, whatever --kube-version an offline run would take.
func judgedForServer(ctx context.Context, cfg *config.Settings, cluster Cluster) (*config.Settings, error) {
	info, err := cluster.ServerVersion(ctx)
	if de := deadlineError(ctx, err, ""); de != nil {
		return nil, fmt.Errorf("reading the apiserver's version: %w", de)
	}
	if err != nil {
		return nil, err
	}
	v, err := config.KubeVersionOfServer(info.Major, info.Minor)
	if err != nil {
		return nil, err
	}
	c := *cfg
	c.KubeVersion = v
	return &c, nil
}

// Err is an *UnsafeUpgradeError when a finding is an error (its text: how
// many), nil otherwise: facts (the error findings, how many warnings, what
// the per-CRD bound leaves out), whose words the front-ends compose
// through package report (report.DeployError is the kapp hook's error).
// The tools command returns it after printing its report.
func (r Result) Err() error {
	if e := newUnsafeUpgradeError(r.Findings, r.maxPerCRD); e != nil {
		return e
	}
	return nil
}

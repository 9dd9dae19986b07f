package evaluation

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TimingEnvVar names the environment variable that makes the check print
// where its time goes, to stderr: set to 1, every evaluation prints one
// line with its offline part (comparison and validation) and its live part
// with the requests it made (and how many server-side dry runs were in
// flight at once), and a deploy's check prints its total. The benchmarks
// (hack/bench-deploy.sh, hack/bench-live.sh) read these lines.
const TimingEnvVar = "KAPP_CRD_UPGRADE_SAFETY_TIMING"

// TimingWriter is where timing lines go: standard error when TimingEnvVar
// is set to 1, nil otherwise.
func TimingWriter() io.Writer {
	if os.Getenv(TimingEnvVar) == "1" {
		return os.Stderr
	}
	return nil
}

// timingOut is TimingWriter; tests replace it.
var timingOut = TimingWriter

// countingCluster counts the requests of the live checks.
type countingCluster struct {
	Cluster
	mu                    sync.Mutex
	dryRuns, pages, count int
	objects               int
	inFlight, maxInFlight int
}

func (c *countingCluster) ListCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition, version string,
	fn func(objs []map[string]any) error) error {
	return c.Cluster.ListCustomResources(ctx, crd, version, func(objs []map[string]any) error {
		c.mu.Lock()
		c.pages++
		c.objects += len(objs)
		c.mu.Unlock()
		return fn(objs)
	})
}

func (c *countingCluster) CountCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition) (int, error) {
	c.add(&c.count, 1)
	return c.Cluster.CountCustomResources(ctx, crd)
}

func (c *countingCluster) DryRun(ctx context.Context, verb Verb, obj *unstructured.Unstructured) ([]string, error) {
	c.mu.Lock()
	c.dryRuns++
	c.inFlight++
	c.maxInFlight = max(c.maxInFlight, c.inFlight)
	c.mu.Unlock()
	defer c.add(&c.inFlight, -1)
	return c.Cluster.DryRun(ctx, verb, obj)
}

func (c *countingCluster) add(n *int, d int) {
	c.mu.Lock()
	*n += d
	c.mu.Unlock()
}

// evaluationTiming is what TimingEnvVar prints about one evaluation. A
// nil *evaluationTiming (TimingEnvVar unset) measures nothing.
type evaluationTiming struct {
	out             io.Writer
	start           time.Time
	pairs, removals int
	// lastOffline is when the last offline pass of a pair ended (unix
	// nanoseconds); passes end on several workers at once.
	lastOffline   atomic.Int64
	offline, live time.Duration
	cluster       *countingCluster
}

// startEvaluationTiming starts measuring an evaluation of plan when
// TimingEnvVar is set; nil otherwise.
func startEvaluationTiming(plan Plan) *evaluationTiming {
	out := timingOut()
	if out == nil {
		return nil
	}
	return &evaluationTiming{out: out, start: time.Now(), removals: len(plan.Removals)}
}

// counting returns cluster with its requests counted (cluster itself when
// not measuring, or nil).
func (t *evaluationTiming) counting(cluster Cluster) Cluster {
	if t == nil || cluster == nil {
		return cluster
	}
	t.cluster = &countingCluster{Cluster: cluster}
	return t.cluster
}

// offlineDone notes that the offline pass of a pair ended.
func (t *evaluationTiming) offlineDone() {
	if t == nil {
		return
	}
	now := time.Now().UnixNano()
	for old := t.lastOffline.Load(); now > old && !t.lastOffline.CompareAndSwap(old, now); old = t.lastOffline.Load() {
	}
}

// end notes how many pairs the evaluation checked and splits its time into
// its offline part (until the last offline pass ended) and its live part
// (the rest, with a cluster).
func (t *evaluationTiming) end(pairs int) {
	if t == nil {
		return
	}
	t.pairs = pairs
	if done := t.lastOffline.Load(); done > 0 {
		t.offline = time.Unix(0, done).Sub(t.start)
	}
	if t.cluster != nil {
		t.live = time.Since(t.start) - t.offline
	}
}

func (t *evaluationTiming) print() {
	if t == nil {
		return
	}
	line := fmt.Sprintf("%s timing: evaluate %dms (offline %dms: %d CRD changes, %d removals",
		config.CheckName, (t.offline + t.live).Milliseconds(), t.offline.Milliseconds(), t.pairs, t.removals)
	if c := t.cluster; c != nil {
		line += fmt.Sprintf("; live %dms: %d server-side dry runs, at most %d in flight; %d LIST pages, %d custom resources validated; %d counts",
			t.live.Milliseconds(), c.dryRuns, c.maxInFlight, c.pages, c.objects, c.count)
	}
	fmt.Fprintln(t.out, line+")")
}

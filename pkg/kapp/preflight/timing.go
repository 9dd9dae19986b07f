package preflight

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"sync"
	"time"

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

// timingOut is where timing lines go (tests replace it); nil when
// TimingEnvVar is not set.
var timingOut = func() io.Writer {
	if os.Getenv(TimingEnvVar) == "1" {
		return os.Stderr
	}
	return nil
}

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

func (c *countingCluster) DryRun(ctx context.Context, verb Verb, obj *unstructured.Unstructured) error {
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

// evaluationTiming is what TimingEnvVar prints about one evaluation.
type evaluationTiming struct {
	out             io.Writer
	pairs, removals int
	offline, live   time.Duration
	cluster         *countingCluster
}

func (t *evaluationTiming) print() {
	line := fmt.Sprintf("%s timing: evaluate %dms (offline %dms: %d CRD changes, %d removals",
		CheckName, (t.offline + t.live).Milliseconds(), t.offline.Milliseconds(), t.pairs, t.removals)
	if c := t.cluster; c != nil {
		line += fmt.Sprintf("; live %dms: %d server-side dry runs, at most %d in flight; %d LIST pages, %d custom resources validated; %d counts",
			t.live.Milliseconds(), c.dryRuns, c.maxInFlight, c.pages, c.objects, c.count)
	}
	fmt.Fprintln(t.out, line+")")
}

// checkTiming measures a whole run of the check for TimingEnvVar: its wall
// time, the bytes it allocated and the garbage collections they caused
// (the process's, so a deploy's other goroutines count too: kapp runs
// nothing else while the check runs). In a deploy, kapp's own live heap is
// large, and every collection the check causes marks all of it.
type checkTiming struct {
	out   io.Writer
	start time.Time
	mem   [2]metrics.Sample
}

func startCheckTiming(out io.Writer) *checkTiming {
	t := &checkTiming{out: out, mem: [2]metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}}
	metrics.Read(t.mem[:])
	t.start = time.Now()
	return t
}

func (t *checkTiming) print() {
	wall := time.Since(t.start)
	end := [2]metrics.Sample{{Name: t.mem[0].Name}, {Name: t.mem[1].Name}}
	metrics.Read(end[:])
	fmt.Fprintf(t.out, "%s timing: check %dms (allocated %.1f MiB, %d garbage collections)\n", CheckName, wall.Milliseconds(),
		float64(end[0].Value.Uint64()-t.mem[0].Value.Uint64())/(1<<20), end[1].Value.Uint64()-t.mem[1].Value.Uint64())
}

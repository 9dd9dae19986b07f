package evaluation

import (
	"fmt"
	"sync"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// Progress of the live checks, which may take minutes on a cluster with
// many custom resources: Evaluate reports it through Plan.Progress, and a
// ProgressPrinter shows it through kapp's UI, throttled.

// LiveProgress is how far the live checks of an evaluation are.
type LiveProgress struct {
	// CRDs is how many CRDs (updates and removals) the live checks look
	// at; CRDsDone how many of them they are done with.
	CRDs, CRDsDone int
	// CustomResources is how many existing custom resources have been
	// validated against their new schema so far.
	CustomResources int
}

// liveTracker counts the progress of the live checks for Plan.Progress.
type liveTracker struct {
	mu     sync.Mutex
	report func(LiveProgress)
	p      LiveProgress
}

// add counts crds CRDs done and objects custom resources validated.
func (t *liveTracker) add(crds, objects int) {
	if t.report == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.CRDsDone += crds
	t.p.CustomResources += objects
	t.report(t.p)
}

// ProgressInterval is how often a ProgressPrinter prints at most.
const ProgressInterval = 10 * time.Second

// ProgressPrinter prints the progress of the live checks: at most one line
// per interval, the first once the checks have run for an interval (quick
// checks print nothing), and a closing line from Done when it printed any.
type ProgressPrinter struct {
	printf   func(format string, args ...any)
	interval time.Duration
	now      func() time.Time

	mu          sync.Mutex
	start, last time.Time
	latest      LiveProgress
	shown       bool
}

// NewProgressPrinter returns a printer that prints with printf (kapp's
// ui.PrintLinef, or ErrorLinef when standard output is a document).
func NewProgressPrinter(printf func(format string, args ...any), interval time.Duration) *ProgressPrinter {
	return newProgressPrinter(printf, interval, time.Now)
}

func newProgressPrinter(printf func(string, ...any), interval time.Duration, now func() time.Time) *ProgressPrinter {
	t := now()
	return &ProgressPrinter{printf: printf, interval: interval, now: now, start: t, last: t}
}

// Update takes the progress (Plan.Progress).
func (p *ProgressPrinter) Update(lp LiveProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest = lp
	if t := p.now(); t.Sub(p.last) >= p.interval {
		p.last = t
		p.shown = true
		p.printf("%s: live checks: %d of %d CRDs done, %d %s validated (%s)",
			config.CheckName, lp.CRDsDone, lp.CRDs, lp.CustomResources, customResources(lp.CustomResources), p.elapsed(t))
	}
}

// Done prints how the live checks ended, if any progress was printed. A
// nil printer prints nothing.
func (p *ProgressPrinter) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		p.printf("%s: live checks done: %d of %d CRDs, %d %s validated in %s",
			config.CheckName, p.latest.CRDsDone, p.latest.CRDs, p.latest.CustomResources,
			customResources(p.latest.CustomResources), p.elapsed(p.now()))
	}
}

func (p *ProgressPrinter) elapsed(t time.Time) string {
	return fmt.Sprint(t.Sub(p.start).Round(time.Second))
}

func customResources(n int) string { return plural.Of(n, "custom resource", "custom resources") }

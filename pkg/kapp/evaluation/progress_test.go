package evaluation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestProgressPrinter(t *testing.T) {
	var lines []string
	printf := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }

	t.Run("quick checks print nothing", func(t *testing.T) {
		lines = nil
		clock := &fakeClock{t: time.Unix(0, 0)}
		p := newProgressPrinter(printf, 10*time.Second, clock.now)
		for i := 1; i <= 5; i++ {
			clock.advance(time.Second)
			p.Update(LiveProgress{CRDs: 5, CRDsDone: i, CustomResources: 1000 * i})
		}
		p.Done()
		require.Empty(t, lines)
	})

	t.Run("a line per interval at most, and a closing line", func(t *testing.T) {
		lines = nil
		clock := &fakeClock{t: time.Unix(0, 0)}
		p := newProgressPrinter(printf, 10*time.Second, clock.now)
		for i := 1; i <= 25; i++ { // an update every 2s for 50s
			clock.advance(2 * time.Second)
			p.Update(LiveProgress{CRDs: 3, CRDsDone: i / 10, CustomResources: 2000 * i})
		}
		clock.advance(time.Second)
		p.Done()
		require.Equal(t, []string{
			"CRDUpgradeSafety: live checks: 0 of 3 CRDs done, 10000 custom resources validated (10s)",
			"CRDUpgradeSafety: live checks: 1 of 3 CRDs done, 20000 custom resources validated (20s)",
			"CRDUpgradeSafety: live checks: 1 of 3 CRDs done, 30000 custom resources validated (30s)",
			"CRDUpgradeSafety: live checks: 2 of 3 CRDs done, 40000 custom resources validated (40s)",
			"CRDUpgradeSafety: live checks: 2 of 3 CRDs done, 50000 custom resources validated (50s)",
			"CRDUpgradeSafety: live checks done: 2 of 3 CRDs, 50000 custom resources validated in 51s",
		}, lines)
	})

	t.Run("a nil printer", func(t *testing.T) {
		var p *ProgressPrinter
		p.Done()
	})
}

// progressLog records what Evaluate reports through Plan.Progress.
type progressLog struct {
	mu      sync.Mutex
	reports []LiveProgress
	inCall  bool
	overlap bool
}

func (l *progressLog) report(p LiveProgress) {
	l.mu.Lock()
	if l.inCall {
		l.overlap = true
	}
	l.inCall = true
	l.reports = append(l.reports, p)
	l.mu.Unlock()
	time.Sleep(time.Millisecond) // a slow reporter: calls must not overlap
	l.mu.Lock()
	l.inCall = false
	l.mu.Unlock()
}

// TestEvaluateReportsProgress: the live checks report each CRD done and
// each batch of custom resources validated, never each object; the counts
// only grow and end at the totals.
func TestEvaluateReportsProgress(t *testing.T) {
	old, safe := mustCRD(t, oldCRD), mustCRD(t, safeCRD)
	watchBatches(t)
	total := 5*objectsPerRead + 17
	cluster := &pagedCluster{total: total, pageSize: 500}
	cfg := config.Default()
	log := &progressLog{}
	plan := Plan{
		Pairs:    []Pair{{Old: old, New: safe}},
		Removals: []Removal{{CRD: mustCRD(t, strings.Replace(oldCRD, "widgets", "sprockets", -1))}},
		Progress: log.report,
	}
	_, err := Evaluate(context.Background(), plan, &cfg, cluster)
	require.NoError(t, err)

	require.False(t, log.overlap, "calls overlapped")
	require.LessOrEqual(t, len(log.reports), 6+2, "one report per batch and per CRD, not per object: %v", log.reports)
	last := log.reports[len(log.reports)-1]
	require.Equal(t, LiveProgress{CRDs: 2, CRDsDone: 2, CustomResources: total}, last)
	for i := 1; i < len(log.reports); i++ {
		a, b := log.reports[i-1], log.reports[i]
		require.True(t, b.CRDsDone >= a.CRDsDone && b.CustomResources >= a.CustomResources, "%v then %v", a, b)
	}

	t.Run("no Progress, no reports", func(t *testing.T) {
		plan.Progress = nil
		_, err := Evaluate(context.Background(), plan, &cfg, cluster)
		require.NoError(t, err)
	})
}

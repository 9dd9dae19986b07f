package evaluation

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/lru"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
)

// TestComparisonsCache: a run whose pair has a Key takes its comparison
// from the cache only when everything the comparison reads is the same:
// the findings are those of a run without a cache, for every pair of the
// engine's golden cases (twice: the second from the cache), and a changed
// setting, Kubernetes version, pair key or a waiver that expired since
// (the run's clock) is compared anew, with the findings it gives alone.
func TestComparisonsCache(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	c := NewComparisons(DefaultComparisons)
	run := func(p Pair, cfg *config.Settings, cache *Comparisons) []string {
		t.Helper()
		fs, err := Evaluate(ctx, Plan{Pairs: []Pair{p}, OldFromFiles: true, Comparisons: cache}, cfg, nil)
		require.NoError(t, err)
		return findingLines(fs)
	}

	n := 0
	for _, pair := range testcrd.Pairs(t, "../crdupgradesafety/testdata") {
		dir, oldCRD, newCRD := pair.Dir, pair.Old, pair.New
		p := Pair{Old: oldCRD, New: newCRD, Key: dir}
		want := run(p, &cfg, nil)
		require.Equal(t, want, run(p, &cfg, c), dir)
		require.Equal(t, want, run(p, &cfg, c), "%s: from the cache", dir)
		n++
	}
	require.Greater(t, n, 20)
	require.Equal(t, n, c.Stats().Hits, "the second run of each pair comes from the cache")

	// What the comparison reads, changed: never served from the cache.
	p := Pair{Old: mustCRD(t, oldCRD), New: testcrd.MustCRD(t, testcrd.UnsafeCRD), Key: "unsafe"}
	base := run(p, &cfg, c)
	require.NotEmpty(t, base)
	hits := c.Stats().Hits
	changed := map[string]func(cfg *config.Settings){
		"mode warn":         func(cfg *config.Settings) { cfg.Mode = config.ModeWarn },
		"minimum check off": func(cfg *config.Settings) { cfg.Checks.SameVersion.Minimum.Enabled = false },
		"kube version 1.35": func(cfg *config.Settings) { cfg.KubeVersion = config.KubeVersion{Major: 1, Minor: 35} },
		"a settings waiver": func(cfg *config.Settings) {
			cfg.Waivers = []config.Waiver{{CRD: p.New.Name, Checks: []string{config.CheckEnum}, Reason: "r", Source: config.SourceSettings}}
		},
		"an acceptance": func(cfg *config.Settings) {
			cfg.AcceptDataLoss = []config.Acceptance{{CRD: p.New.Name, Check: config.CheckEnum, Version: "v1", Path: "^.spec.color",
				Reason: "r", Expires: time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)}}
		},
		"annotation waivers, carried over": func(cfg *config.Settings) {
			cfg.Waivers = []config.Waiver{{CRD: p.New.Name, Checks: []string{config.CheckEnum}, Reason: "r", Source: config.SourceAnnotation, CarriedOver: true}}
		},
		"annotation waivers not allowed": func(cfg *config.Settings) {
			cfg.Waivers = []config.Waiver{{CRD: p.New.Name, Checks: []string{config.CheckEnum}, Reason: "r", Source: config.SourceAnnotation}}
			cfg.AnnotationWaivers = &config.AnnotationWaivers{Checks: []string{config.CheckMinimum}}
		},
	}
	for name, change := range changed {
		changedCfg := config.Default()
		change(&changedCfg)
		want := run(p, &changedCfg, nil)
		if name != "kube version 1.35" { // the same findings here, another key still
			require.NotEqual(t, base, want, "%s: the setting must change the findings for this test to mean something", name)
		}
		require.Equal(t, want, run(p, &changedCfg, c), name)
		require.Equal(t, hits, c.Stats().Hits, "%s: served from the cache", name)
	}
	// Another pair (another key): compared anew.
	other := Pair{Old: p.Old, New: mustCRD(t, oldCRD), Key: "same"}
	require.Equal(t, run(other, &cfg, nil), run(other, &cfg, c))
	require.Equal(t, hits, c.Stats().Hits)

	// A waiver annotation that expires at the end of a day: the same
	// pair the next day is compared anew, and the finding is no longer
	// waived.
	expiring := *p.New
	expiring.Annotations = map[string]string{config.WaiveAnnotation: "minimum", config.WaiveReasonAnnotation: "load tests",
		config.WaiveExpiresAnnotation: "2026-11-26"}
	pe := Pair{Old: p.Old, New: &expiring, Key: "expiring"}
	day := config.Default()
	day.Now = time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	waived := run(pe, &day, c)
	require.Equal(t, waived, run(pe, &day, c))
	hits = c.Stats().Hits
	day.Now = day.Now.Add(2 * time.Hour)
	want := run(pe, &day, nil)
	require.NotEqual(t, waived, want)
	require.Equal(t, want, run(pe, &day, c))
	require.Equal(t, hits, c.Stats().Hits, "an expired waiver served from the cache")
}

// TestComparisonsBound: the cache keeps at most its bound, the least
// recently used out first.
func TestComparisonsBound(t *testing.T) {
	cfg := config.Default()
	c := NewComparisons(2)
	p := Pair{Old: mustCRD(t, oldCRD), New: testcrd.MustCRD(t, testcrd.UnsafeCRD)}
	for _, key := range []string{"a", "b", "a", "c", "a", "b"} {
		p.Key = key
		c.compare(p, &cfg)
	}
	// a miss, b miss, a hit, c miss (b out), a hit, b miss (c out).
	require.Equal(t, 2, c.Stats().Hits)
	require.Equal(t, 2, c.Stats().Entries)
	require.Equal(t, 2, c.Stats().Evicted)
}

// findingLines are the facts of findings, one line each (a finding's
// unexported sort key aside).
func findingLines(fs []finding.Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = fmt.Sprintf("%s %s %s %s %s %s %s waived=%t expired=%t: %s", f.Severity, f.Check, f.CRD, f.Version, f.Field,
			f.CRDField, f.Fingerprint, f.Waiver != nil, f.ExpiredWaiver != nil, report.Message(f))
	}
	return out
}

// manyRemovals is a pair whose new CRD removes n fields of the old one:
// n findings.
func manyRemovals(t *testing.T, n int) Pair {
	t.Helper()
	old := testcrd.MustCRD(t, testcrd.OldCRD)
	spec := old.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for i := range n {
		spec.Properties[fmt.Sprintf("removedField%05d", i)] = apiextv1.JSONSchemaProps{Type: "string",
			Description: strings.Repeat("a description of the field ", 4)}
	}
	old.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	return Pair{Old: old, New: testcrd.MustCRD(t, testcrd.OldCRD)}
}

// TestComparisonsBoundBytes: the cache keeps at most its byte bound of
// findings (findingsMemory), the least recently used out first, whatever
// room its entry bound leaves; a result over the whole bound is not kept.
func TestComparisonsBoundBytes(t *testing.T) {
	cfg := config.Default()
	p := manyRemovals(t, 50)
	key, err := comparisonKey("a", &cfg)
	require.NoError(t, err)
	one := findingsMemory(crdupgradesafety.Compare(p.Old, p.New, &cfg)) + int64(len(key))
	require.Greater(t, one, int64(50*100), "50 findings")

	c := NewComparisonsWithin(100, 2*one) // room for two
	for _, k := range []string{"a", "b", "a", "c", "a", "b"} {
		p.Key = k
		c.compare(p, &cfg)
	}
	// a miss, b miss, a hit, c miss (b out), a hit, b miss (c out): as by
	// entries, within bytes.
	st := c.Stats()
	require.Equal(t, lru.Stats{Entries: 2, Bytes: 2 * one, Hits: 2, Evicted: 2}, st)

	small := NewComparisonsWithin(100, one-1)
	p.Key = "a"
	small.compare(p, &cfg)
	require.Zero(t, small.Stats().Entries, "a result over the bound is not kept")
	wide := NewComparisonsWithin(100, 100*one)
	for _, k := range []string{"a", "b", "c"} {
		p.Key = k
		wide.compare(p, &cfg)
	}
	require.Equal(t, 3, wide.Stats().Entries, "the same results within a larger bound")
}

// TestFindingsSizeEstimate: the memory of the findings of a comparison,
// measured on the heap, is within findingsMemory.
func TestFindingsSizeEstimate(t *testing.T) {
	cfg := config.Default()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, n := range []int{200, 2000} {
		p := manyRemovals(t, n)
		before := heap()
		fs := crdupgradesafety.Compare(p.Old, p.New, &cfg)
		used := heap() - before
		require.GreaterOrEqual(t, len(fs), n)
		estimate := findingsMemory(fs)
		runtime.KeepAlive(fs)
		require.LessOrEqualf(t, int64(used), estimate, "%d findings: %d bytes, estimated %d", len(fs), used, estimate)
		t.Logf("%d findings: %d bytes, estimated %d", len(fs), used, estimate)
	}
}

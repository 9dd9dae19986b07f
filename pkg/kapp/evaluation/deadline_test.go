package evaluation_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/version"
)

// slowCluster is an apiserver that stops answering: it serves a number of
// pages of custom resources, then waits until the caller gives up. Every
// wait records the deadline of its context.
type slowCluster struct {
	evaluation.Unsupported
	crds         map[string]*apiextv1.CustomResourceDefinition
	pages        int // pages of pageSize custom resources served before stalling
	pageSize     int
	stallGets    bool
	stallLists   bool
	stallCounts  bool
	stallDryRuns bool
	// failLists fails the LIST of the named CRDs at once.
	failLists map[string]error

	mu        sync.Mutex
	deadlines []time.Time // of every call's context (zero: none)
}

func (s *slowCluster) wait(ctx context.Context, stall bool) error {
	d, _ := ctx.Deadline()
	s.mu.Lock()
	s.deadlines = append(s.deadlines, d)
	s.mu.Unlock()
	if !stall {
		return nil
	}
	select {
	case <-ctx.Done():
		// As client-go reports it: the request's error wraps the context's.
		return fmt.Errorf("Get \"https://127.0.0.1:6443/apis/example.com/v1/widgets\": %w", ctx.Err())
	case <-time.After(10 * time.Second):
		return errors.New("slowCluster: nothing ended the wait (no deadline?)")
	}
}

func (s *slowCluster) GetCRDs(ctx context.Context, names []string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	if err := s.wait(ctx, s.stallGets); err != nil {
		return nil, err
	}
	return evaluationtest.CRDsNamed(s.crds, names), nil
}

func (s *slowCluster) ListCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition, version string,
	fn func([]map[string]any) error) error {
	if err := s.failLists[crd.Name]; err != nil {
		return err
	}
	for p := 0; p < s.pages; p++ {
		objs := make([]map[string]any, s.pageSize)
		for i := range objs {
			objs[i] = map[string]any{"apiVersion": crd.Spec.Group + "/" + version, "kind": crd.Spec.Names.Kind,
				"metadata": map[string]any{"name": fmt.Sprintf("w-%d-%d", p, i), "namespace": "default"}}
		}
		if err := fn(objs); err != nil {
			return err
		}
	}
	return s.wait(ctx, s.stallLists)
}

func (s *slowCluster) CountCustomResources(ctx context.Context, _ *apiextv1.CustomResourceDefinition) (int, error) {
	return 0, s.wait(ctx, s.stallCounts)
}

func (s *slowCluster) ServerVersion(context.Context) (*version.Info, error) {
	return &version.Info{Major: "1", Minor: "37"}, nil
}

func (s *slowCluster) DryRun(ctx context.Context, _ evaluation.Verb, _ *unstructured.Unstructured) ([]string, error) {
	return nil, s.wait(ctx, s.stallDryRuns)
}

// TestLiveChecksDeadline: a live check that waits past the deadline fails
// the run (fail closed) with an error naming the CRD and what was waiting.
func TestLiveChecksDeadline(t *testing.T) {
	old, safe := testcrd.MustCRD(t, testcrd.OldCRD), testcrd.MustCRD(t, testcrd.SafeCRD)
	update := evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: safe}}}
	removal := evaluation.Plan{Removals: []evaluation.Removal{{CRD: old}}}
	replace := evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: safe, Strategy: evaluation.StrategyAlwaysReplace}}}
	dryRun := evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: safe, Send: &unstructured.Unstructured{Object: map[string]any{}}}}}
	const timeout = 50 * time.Millisecond

	cases := []struct {
		name    string
		plan    evaluation.Plan
		cluster *slowCluster
		want    string
	}{
		{name: "listing stalls after some pages", plan: update,
			cluster: &slowCluster{pages: 3, pageSize: 2, stallLists: true},
			want:    "listing widgets of CRD widgets.example.com at version v1: deadline of 50ms (liveChecksTimeout) exceeded after reading 3 pages (6 custom resources)"},
		{name: "listing stalls at once", plan: update,
			cluster: &slowCluster{stallLists: true},
			want:    "listing widgets of CRD widgets.example.com at version v1: deadline of 50ms (liveChecksTimeout) exceeded before the first page"},
		{name: "counting stalls", plan: removal,
			cluster: &slowCluster{stallCounts: true},
			want:    "counting custom resources of CRD widgets.example.com: deadline of 50ms (liveChecksTimeout) exceeded"},
		{name: "counting for a replace stalls", plan: replace,
			cluster: &slowCluster{stallCounts: true},
			want:    "counting custom resources of CRD widgets.example.com: deadline of 50ms (liveChecksTimeout) exceeded"},
		{name: "a dry run stalls", plan: dryRun,
			cluster: &slowCluster{stallDryRuns: true},
			want:    "server-side dry run of the update of CRD widgets.example.com: deadline of 50ms (liveChecksTimeout) exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			ctx, cancel := evaluation.WithLiveDeadline(context.Background(), timeout)
			defer cancel()
			findings, err := evaluation.Evaluate(ctx, tc.plan, &cfg, tc.cluster)
			require.EqualError(t, err, tc.want)
			require.Nil(t, findings)
			require.ErrorIs(t, err, evaluation.ErrLiveChecksTimeout)
			require.ErrorIs(t, err, context.DeadlineExceeded, "the cause is kept")
			var de *evaluation.DeadlineError
			require.ErrorAs(t, err, &de)
			require.Equal(t, timeout, de.Timeout)
		})
	}

	t.Run("a deadline not reached changes nothing", func(t *testing.T) {
		cfg := config.Default()
		ctx, cancel := evaluation.WithLiveDeadline(context.Background(), time.Minute)
		defer cancel()
		findings, err := evaluation.Evaluate(ctx, update, &cfg, &slowCluster{pages: 3, pageSize: 2})
		require.NoError(t, err)
		require.Empty(t, findings)
	})

	t.Run("other errors are not deadline errors", func(t *testing.T) {
		cfg := config.Default()
		ctx, cancel := evaluation.WithLiveDeadline(context.Background(), time.Minute)
		defer cancel()
		_, err := evaluation.Evaluate(ctx, update, &cfg, &slowCluster{failLists: map[string]error{old.Name: errors.New("forbidden")}})
		require.EqualError(t, err, "checking existing custom resources of CRD widgets.example.com: forbidden")
		require.NotErrorIs(t, err, evaluation.ErrLiveChecksTimeout)
	})
}

func gadgetYAML(widgetYAML string) string {
	return strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget", "widget", "gadget").Replace(widgetYAML)
}

// TestLiveChecksShowTheFailure: when the live check of one CRD fails, the
// error is that failure, not the "context canceled" of the live check of
// another CRD (listed first) that the failure cancelled.
func TestLiveChecksShowTheFailure(t *testing.T) {
	plan := evaluation.Plan{Pairs: []evaluation.Pair{
		{Old: testcrd.MustCRD(t, testcrd.OldCRD), New: testcrd.MustCRD(t, testcrd.SafeCRD)},
		{Old: testcrd.MustCRD(t, gadgetYAML(testcrd.OldCRD)), New: testcrd.MustCRD(t, gadgetYAML(testcrd.SafeCRD))},
	}}
	cluster := &slowCluster{stallLists: true, failLists: map[string]error{
		"gadgets.example.com": errors.New("gadgets.example.com is forbidden: User \"ci\" cannot list resource \"gadgets\""),
	}}
	cfg := config.Default()
	for i := 0; i < 20; i++ { // whatever the scheduling
		_, err := evaluation.Evaluate(context.Background(), plan, &cfg, cluster)
		require.EqualError(t, err, "checking existing custom resources of CRD gadgets.example.com: "+
			"gadgets.example.com is forbidden: User \"ci\" cannot list resource \"gadgets\"")
	}
}

// TestRunLiveChecksTimeout: the deadline of every wait of a run on the
// cluster comes from liveChecksTimeout (5m by default): the GET of an old
// side, a dry run, a LIST and a count.
func TestRunLiveChecksTimeout(t *testing.T) {
	cases := []struct {
		name string
		raw  map[string]any
		want time.Duration
	}{
		{name: "default", want: config.DefaultLiveChecksTimeout},
		{name: "configured", raw: map[string]any{"liveChecksTimeout": "90s"}, want: 90 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster := &slowCluster{crds: map[string]*apiextv1.CustomResourceDefinition{"widgets.example.com": testcrd.MustCRD(t, testcrd.OldCRD)}}
			cfg, err := config.Decode(tc.raw)
			require.NoError(t, err)
			plan := evaluation.Plan{
				Pairs:    []evaluation.Pair{{New: testcrd.MustCRD(t, testcrd.SafeCRD), Send: &unstructured.Unstructured{Object: map[string]any{}}}},
				Removals: []evaluation.Removal{{CRD: testcrd.MustCRD(t, gadgetYAML(testcrd.OldCRD))}},
			}
			start := time.Now()
			_, err = evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg, OldFromCluster: []int{0},
				Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
			require.NoError(t, err)
			require.Len(t, cluster.deadlines, 4, "a GET, a dry run, a LIST and a count")
			for _, d := range cluster.deadlines {
				require.False(t, d.IsZero(), "a wait without a deadline")
				require.WithinRange(t, d, start.Add(tc.want), time.Now().Add(tc.want))
			}
		})
	}
}

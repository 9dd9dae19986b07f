package evaluation_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/version"
)

// TestRunShowsProgress: a run reports the progress of its live checks
// through Progressf; a run without a cluster prints nothing.
func TestRunShowsProgress(t *testing.T) {
	cluster := &evaluationtest.Cluster{Objs: []map[string]any{{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default"},
		"spec":     map[string]any{"size": int64(7)},
	}}}
	var out strings.Builder
	printf := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	cfg := config.Default()
	plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: testcrd.MustCRD(t, testcrd.OldCRD), New: testcrd.MustCRD(t, testcrd.SafeCRD)}}}
	_, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg,
		Cluster: func() (evaluation.Cluster, error) { return cluster, nil }, Progressf: printf})
	require.NoError(t, err)
	require.Contains(t, out.String(), "CRDUpgradeSafety: live checks: 0 of 1 CRDs done, 1 custom resource validated (")
	require.Contains(t, out.String(), "CRDUpgradeSafety: live checks done: 1 of 1 CRDs, 1 custom resource validated in ")

	out.Reset()
	_, err = evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg, Progressf: printf})
	require.NoError(t, err)
	require.Empty(t, out.String())
}

// TestRunReachesTheClusterWhenNeeded: the cluster is reached only when the
// plan needs it, old sides are to be read from it, or AlwaysLive says so;
// a failure to reach it is the run's error.
func TestRunReachesTheClusterWhenNeeded(t *testing.T) {
	off := config.Default()
	off.Checks.CRD.ExistingResources.Enabled = false
	update := evaluation.Plan{Pairs: []evaluation.Pair{{Old: testcrd.MustCRD(t, testcrd.OldCRD), New: testcrd.MustCRD(t, testcrd.SafeCRD)}}}
	fresh := evaluation.Plan{Pairs: []evaluation.Pair{{New: testcrd.MustCRD(t, testcrd.SafeCRD)}}}
	cases := []struct {
		name    string
		req     evaluation.Request
		reached bool
	}{
		{name: "nothing to check", req: evaluation.Request{}},
		{name: "no live check enabled", req: evaluation.Request{Plan: update}},
		{name: "existingResources", req: evaluation.Request{Plan: update}, reached: true},
		{name: "old sides from the cluster", req: evaluation.Request{Plan: fresh, AllOldFromCluster: true}, reached: true},
		{name: "AlwaysLive", req: evaluation.Request{Plan: update, AlwaysLive: true}, reached: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if !tc.reached || tc.name == "AlwaysLive" {
				cfg = off
			}
			tc.req.Settings = &cfg
			cluster := &evaluationtest.Cluster{}
			tc.req.Cluster = func() (evaluation.Cluster, error) { cluster.Contacts++; return cluster, nil }
			res, err := evaluation.Run(context.Background(), tc.req)
			require.NoError(t, err)
			require.Equal(t, tc.reached, cluster.Contacts == 1)
			require.Equal(t, tc.reached, res.Live)
		})
	}

	cfg := config.Default()
	_, err := evaluation.Run(context.Background(), evaluation.Request{Plan: update, Settings: &cfg,
		Cluster: func() (evaluation.Cluster, error) { return nil, errors.New("no kubeconfig") }})
	require.EqualError(t, err, "no kubeconfig")
}

// TestResultErr: error findings are one error type, facts only: its text
// is their count, its fields the findings, the warnings and what the
// per-CRD bound leaves out; report.DeployError, the kapp hook's error,
// lists the bounded findings after it.
func TestResultErr(t *testing.T) {
	cfg := config.Default()
	cfg.MaxFindingsPerCRD = 1
	plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: testcrd.MustCRD(t, testcrd.OldCRD), New: testcrd.MustCRD(t, testcrd.UnsafeCRD)}}}
	res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg})
	require.NoError(t, err)

	err = res.Err()
	var unsafe *evaluation.UnsafeUpgradeError
	require.ErrorAs(t, err, &unsafe)
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.Len(t, unsafe.Findings, 2)
	require.Zero(t, unsafe.Warnings)
	require.Equal(t, map[string]int{"widgets.example.com": 1}, unsafe.Omitted)
	require.EqualError(t, err, "unsafe CRD upgrade: 2 error findings")

	deployErr := &report.DeployError{Err: err, Report: report.New(nil, res.Findings, cfg.MaxFindingsPerCRD, nil)}
	err = deployErr
	require.ErrorAs(t, err, &unsafe)
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.Len(t, deployErr.Lines(), 2, "one finding kept, then the note")
	require.True(t, strings.HasPrefix(err.Error(), "unsafe CRD upgrade: 2 error findings:\n  crd widgets.example.com "), err.Error())
	require.Contains(t, err.Error(), "\n  ... and 1 more finding for CRD widgets.example.com")

	cfg.Mode = config.ModeWarn
	res, err = evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg})
	require.NoError(t, err)
	require.NoError(t, res.Err())
}

// TestRunJudgesForTheServerVersion: a live run judges as the apiserver in
// front of it validates, whatever the settings say: an int32 added to an
// integer is a finding on 1.37 (with its stored value beyond the range as
// its impact), and nothing on 1.35, where that value stays valid.
func TestRunJudgesForTheServerVersion(t *testing.T) {
	old := testcrd.MustCRD(t, testcrd.OldCRD)
	narrowed := testcrd.MustCRD(t, strings.Replace(testcrd.OldCRD, "size: {type: integer,", "size: {type: integer, format: int32,", 1))
	for _, tc := range []struct {
		minor string
		want  []string
	}{
		{"37", []string{"format ^.spec.size 1.37 1.37 1"}},
		{"37+", []string{"format ^.spec.size 1.37 1.37 1"}},
		{"38", []string{"format ^.spec.size 1.37 1.38 1"}},
		{"35", nil},
		{"36", nil},
	} {
		t.Run(tc.minor, func(t *testing.T) {
			cluster := &evaluationtest.Cluster{Version: &version.Info{Major: "1", Minor: tc.minor}, Objs: []map[string]any{{
				"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": "w1", "namespace": "default"},
				"spec":     map[string]any{"size": int64(3_000_000_000)},
			}}}
			cfg := config.Default()
			cfg.KubeVersion = config.KubeVersion{Major: 1, Minor: 35} // an offline setting: the cluster's version wins
			plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: narrowed}}}
			res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg,
				Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
			require.NoError(t, err)
			var got []string
			for _, f := range res.Findings {
				affected := 0
				if f.Impact != nil {
					affected = f.Impact.Affected
				}
				got = append(got, fmt.Sprintf("%s %s %s %s %d", f.Check, f.Field, f.KubeVersionSince, f.KubeVersion, affected))
			}
			require.Equal(t, tc.want, got)
		})
	}
	t.Run("offline, the settings' version", func(t *testing.T) {
		for v, want := range map[string]int{"1.35": 0, "1.37": 1} {
			cfg := config.Default()
			kv, err := config.ParseKubeVersion(v)
			require.NoError(t, err)
			cfg.KubeVersion = kv
			res, err := evaluation.Run(context.Background(), evaluation.Request{Settings: &cfg,
				Plan: evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: narrowed}}, OldFromFiles: true}})
			require.NoError(t, err)
			require.Len(t, res.Findings, want, v)
		}
	})
	t.Run("an unreadable version fails the run", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{Version: &version.Info{}}
		cfg := config.Default()
		_, err := evaluation.Run(context.Background(), evaluation.Request{Settings: &cfg,
			Plan:    evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: narrowed}}},
			Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
		require.ErrorIs(t, err, config.ErrUnsupportedKubeVersion)
	})
}

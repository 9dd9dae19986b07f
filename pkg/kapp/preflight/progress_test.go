package preflight

import (
	"context"
	"testing"

	ctldgraph "carvel.dev/kapp/pkg/kapp/diffgraph"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/stretchr/testify/require"
)

// TestRunShowsProgress: the deploy check prints the progress of its live
// checks through kapp's UI.
func TestRunShowsProgress(t *testing.T) {
	cluster := &evaluationtest.Cluster{Objs: []map[string]any{{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default"},
		"spec":     map[string]any{"size": int64(7)},
	}}}
	check, out := newCheck(t, cluster, nil)
	check.progressInterval = 0 // every update
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, safeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.NoError(t, err)
	require.Contains(t, out.String(), "CRDUpgradeSafety: live checks: 0 of 1 CRDs done, 1 custom resource validated (")
	require.Contains(t, out.String(), "CRDUpgradeSafety: live checks done: 1 of 1 CRDs, 1 custom resource validated in ")
}

package preflight

import (
	"context"
	"testing"

	ctldgraph "carvel.dev/kapp/pkg/kapp/diffgraph"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// slowCluster is a cluster whose LISTs wait until the caller gives up.
type slowCluster struct{ evaluationtest.Cluster }

func (s *slowCluster) ListCustomResources(ctx context.Context, _ *apiextv1.CustomResourceDefinition, _ string,
	_ func([]map[string]any) error) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestLiveChecksTimeoutConfig: the deploy's liveChecksTimeout bounds the
// live checks of its run (evaluation.Run; see its tests for every wait),
// and their expiry fails the deploy's check, not as an unsafe upgrade.
func TestLiveChecksTimeoutConfig(t *testing.T) {
	cluster := &slowCluster{}
	check := NewCRDUpgradeSafety(ui.NewNoopUI(), func() (evaluation.Cluster, error) { return cluster, nil }, true)
	require.NoError(t, check.SetConfig(map[string]any{"liveChecksTimeout": "50ms"}))
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, safeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.EqualError(t, err, "listing widgets of CRD widgets.example.com at version v1: deadline of 50ms (liveChecksTimeout) exceeded before the first page")
	require.NotErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
}

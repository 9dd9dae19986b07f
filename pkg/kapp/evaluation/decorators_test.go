package evaluation_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/stretchr/testify/require"
)

// TestDecoratorsKeepEveryCapability: the timing decorator
// (KAPP_CRD_UPGRADE_SAFETY_TIMING) forwards every method of the Cluster it
// wraps, the optional capabilities (DependentsOf,
// ListStorageVersionMigrations) included. The webhook's decorator has the
// same test (TestCountingKeepsEveryCapability).
func TestDecoratorsKeepEveryCapability(t *testing.T) {
	evaluationtest.RequireForwardsEveryMethod(t, evaluation.TimingCounting)
}

// TestRequireForwardsEveryMethodCatchesAHiddenCapability: the test above
// fails for a decorator that answers a capability itself.
func TestRequireForwardsEveryMethodCatchesAHiddenCapability(t *testing.T) {
	var errs errorsOf
	evaluationtest.RequireForwardsEveryMethod(&errs, func(c evaluation.Cluster) evaluation.Cluster { return hiding{c} })
	require.Equal(t, errorsOf{
		"DependentsOf through the decorator: listing dependents: not supported by this cluster",
		"DependentsOf through the decorator did not reach the cluster it wraps (a capability hidden)",
	}, errs)
}

// hiding is a decorator that drops DependentsOf, as the timing decorator
// did when it was an optional interface.
type hiding struct{ evaluation.Cluster }

func (hiding) DependentsOf(ctx context.Context, apiVersions []string, kind string, fn func(kube.Dependent)) (int, []kube.Skipped, error) {
	return evaluation.Unsupported{}.DependentsOf(ctx, apiVersions, kind, fn)
}

type errorsOf []string

func (*errorsOf) Helper() {}
func (e *errorsOf) Errorf(format string, args ...any) {
	*e = append(*e, fmt.Sprintf(format, args...))
}

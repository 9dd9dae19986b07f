package evaluation_test

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/stretchr/testify/require"
)

// TestEveryLiveCheckThroughEveryDecorator: every check that reads the
// cluster finds what it finds on the bare Cluster through each decorator of
// this package (the timing one, KAPP_CRD_UPGRADE_SAFETY_TIMING). The
// webhook's decorator has the same test (TestEveryLiveCheckThroughCounting).
func TestEveryLiveCheckThroughEveryDecorator(t *testing.T) {
	for name, decorate := range map[string]func(evaluation.Cluster) evaluation.Cluster{
		"none":   func(c evaluation.Cluster) evaluation.Cluster { return c },
		"timing": evaluation.TimingCounting,
	} {
		t.Run(name, func(t *testing.T) {
			evaluationtest.RequireEveryLiveCheck(t, evaluationtest.LiveChecks(t), func() *evaluationtest.Cluster { return evaluationtest.LiveCluster(t) }, decorate)
		})
	}
}

// TestLiveChecksCoverEveryCapability: each method of evaluation.Cluster is
// the capability of a live check, and a decorator that hides it makes that
// check find something else: a capability added to the port without a
// check here, or a check whose finding does not depend on its capability,
// fails.
func TestLiveChecksCoverEveryCapability(t *testing.T) {
	checks := evaluationtest.LiveChecks(t)
	covered := map[string]bool{}
	for _, lc := range checks {
		covered[lc.Capability] = true
	}
	for _, capability := range evaluationtest.Capabilities() {
		require.True(t, covered[capability], "no live check needs %s", capability)
		t.Run("hiding "+capability, func(t *testing.T) {
			for _, lc := range checks {
				var errs errorsOf
				evaluationtest.RequireEveryLiveCheck(&errs, []evaluationtest.LiveCheck{lc}, func() *evaluationtest.Cluster { return evaluationtest.LiveCluster(t) },
					evaluationtest.Hiding(capability))
				if lc.Capability == capability {
					require.NotEmpty(t, errs, "%s finds the same without %s", lc.Check, capability)
				}
			}
		})
	}
}

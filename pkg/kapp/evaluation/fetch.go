package evaluation

import (
	"context"
	"errors"
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/kube"
)

// FillOld sets the old side of the pairs of plan at the given indexes (nil:
// every pair) to the live CRD of the same name, fetched with concurrent
// GETs (see kube.Client.GetCRDs). A name without a CRD on the cluster
// is a new CRD: its Old stays nil. The deploy uses it for changes that did
// not carry the live object kapp fetched, the tools command for all CRDs
// when it compares with the cluster.
func FillOld(ctx context.Context, plan *Plan, pairs []int, cluster Cluster) error {
	if pairs == nil {
		pairs = make([]int, len(plan.Pairs))
		for i := range pairs {
			pairs[i] = i
		}
	}
	names := make([]string, len(pairs))
	for i, idx := range pairs {
		names[i] = plan.Pairs[idx].New.Name
	}
	live, err := cluster.GetCRDs(ctx, names)
	var get *kube.GetCRDError
	if errors.As(err, &get) {
		if de := deadlineError(ctx, get.Err, ""); de != nil {
			err = fmt.Errorf("getting CRD %s: %w", get.Name, de)
		}
	}
	if err != nil {
		return fmt.Errorf("fetching live CRDs: %w", err)
	}
	for _, idx := range pairs {
		plan.Pairs[idx].Old = live[plan.Pairs[idx].New.Name]
	}
	return nil
}

package preflight

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestForEachLimit(t *testing.T) {
	var running, peak, calls int32
	err := forEachLimit(context.Background(), 50, 4, func(context.Context, int) error {
		n := atomic.AddInt32(&running, 1)
		for {
			p := atomic.LoadInt32(&peak)
			if n <= p || atomic.CompareAndSwapInt32(&peak, p, n) {
				break
			}
		}
		atomic.AddInt32(&calls, 1)
		atomic.AddInt32(&running, -1)
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 50, calls)
	require.LessOrEqual(t, peak, int32(4))

	require.NoError(t, forEachLimit(context.Background(), 0, 4, nil))
}

func TestForEachLimitReturnsLowestIndexError(t *testing.T) {
	err := forEachLimit(context.Background(), 10, 10, func(_ context.Context, i int) error {
		if i == 3 || i == 7 {
			return fmt.Errorf("task %d: %w", i, errors.New("boom"))
		}
		return nil
	})
	require.EqualError(t, err, "task 3: boom")
}

func TestListVersion(t *testing.T) {
	crd := &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{Versions: []apiextv1.CustomResourceDefinitionVersion{
		{Name: "v1alpha1", Served: false},
		{Name: "v1beta1", Served: true},
		{Name: "v1", Served: true, Storage: true},
	}}}
	require.Equal(t, "v1", listVersion(crd))
	crd.Spec.Versions[2].Served = false
	require.Equal(t, "v1beta1", listVersion(crd))
	crd.Spec.Versions[1].Served = false
	require.Equal(t, "", listVersion(crd))
}

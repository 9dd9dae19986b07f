package evaluation

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/kube/kubetest"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/version"
)

// TestKubeClientDeadline: the deadline of WithLiveDeadline ends real
// HTTP requests that the apiserver does not answer, and the errors name
// what was waiting.
func TestKubeClientDeadline(t *testing.T) {
	old, safe := mustCRD(t, oldCRD), mustCRD(t, safeCRD)

	t.Run("GET of a live CRD", func(t *testing.T) {
		api := &kubetest.APIServer{T: t, StallGets: true}
		ctx, cancel := WithLiveDeadline(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := FillOld(ctx, &Plan{Pairs: []Pair{{New: safe}}}, nil, api.Start())
		require.EqualError(t, err, "fetching live CRDs: getting CRD widgets.example.com: deadline of 100ms (liveChecksTimeout) exceeded")
		require.ErrorIs(t, err, ErrLiveChecksTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	for _, viaREST := range []bool{false, true} {
		t.Run(fmt.Sprintf("LIST of custom resources, via REST %t", viaREST), func(t *testing.T) {
			api := &kubetest.APIServer{T: t, Widgets: 1000, StallAfter: 2, ViaREST: viaREST}
			ctx, cancel := WithLiveDeadline(context.Background(), 100*time.Millisecond)
			defer cancel()
			cfg := config.Default()
			_, err := Evaluate(ctx, Plan{Pairs: []Pair{{Old: old, New: safe}}}, &cfg, api.Start())
			require.EqualError(t, err, "listing widgets of CRD widgets.example.com at version v1: "+
				"deadline of 100ms (liveChecksTimeout) exceeded after reading 2 pages (200 custom resources)")
			require.ErrorIs(t, err, context.DeadlineExceeded)
		})
	}
}

// tracker makes a custom resource's liveness visible: the object holds
// the only strong pointer to it (24 bytes: not tiny-allocated, so its
// weak pointer dies with the object alone).
type tracker struct{ id, _, _ int }

// batchWatch replaces readBatch for a test and records the size of
// every batch and which objects it saw.
type batchWatch struct {
	sizes []int
	seen  map[int]int // tracker id -> times read
	bad   int         // objects that are not ones the cluster served
}

func watchBatches(t *testing.T) *batchWatch {
	w := &batchWatch{seen: map[int]int{}}
	prev := readBatch
	readBatch = func(_ func([]map[string]any) error, objs []map[string]any) error {
		w.sizes = append(w.sizes, len(objs))
		for _, o := range objs {
			if tr, ok := o["tracker"].(*tracker); ok {
				w.seen[tr.id]++
			} else {
				w.bad++
			}
		}
		return nil
	}
	t.Cleanup(func() { readBatch = prev })
	return w
}

// pagedCluster serves `total` custom resources in pages of pageSize and,
// before each page, counts how many objects it served are still alive
// (after a garbage collection): what the caller keeps in memory.
type pagedCluster struct {
	Unsupported
	total, pageSize int
	weaks           []weak.Pointer[tracker]
	maxAlive        int
}

func (c *pagedCluster) GetCRDs(context.Context, []string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	return nil, nil
}

func (c *pagedCluster) CountCustomResources(context.Context, *apiextv1.CustomResourceDefinition) (int, error) {
	return c.total, nil
}

func (c *pagedCluster) ServerVersion(context.Context) (*version.Info, error) {
	return &version.Info{Major: "1", Minor: "37"}, nil
}

func (c *pagedCluster) DryRun(context.Context, Verb, *unstructured.Unstructured) ([]string, error) {
	return nil, nil
}

func (c *pagedCluster) ListCustomResources(_ context.Context, crd *apiextv1.CustomResourceDefinition, version string,
	fn func([]map[string]any) error) error {
	for start := 0; start < c.total; start += c.pageSize {
		c.measure()
		if err := c.serve(start, crd.Spec.Group+"/"+version, fn); err != nil {
			return err
		}
	}
	c.measure()
	return nil
}

// serve builds one page and hands it over; nothing here keeps it.
func (c *pagedCluster) serve(start int, apiVersion string, fn func([]map[string]any) error) error {
	objs := make([]map[string]any, 0, c.pageSize)
	for i := start; i < min(start+c.pageSize, c.total); i++ {
		tr := &tracker{id: i}
		c.weaks = append(c.weaks, weak.Make(tr))
		objs = append(objs, map[string]any{"apiVersion": apiVersion, "kind": "Widget", "tracker": tr,
			"metadata": map[string]any{"name": kubetest.WidgetName(i), "namespace": "default"}})
	}
	return fn(objs)
}

func (c *pagedCluster) measure() {
	runtime.GC()
	alive := 0
	for _, w := range c.weaks {
		if w.Value() != nil {
			alive++
		}
	}
	c.maxAlive = max(c.maxAlive, alive)
}

// TestExistingResourcesBatching: the existingResources check validates the
// pages of a LIST in batches of about objectsPerRead objects, every
// object exactly once, and releases each batch once validated, so memory
// is bounded by a batch, not by the number of custom resources.
func TestExistingResourcesBatching(t *testing.T) {
	old, safe := mustCRD(t, oldCRD), mustCRD(t, safeCRD)
	for _, pageSize := range []int{500, 700, 3000} {
		t.Run(fmt.Sprintf("pages of %d", pageSize), func(t *testing.T) {
			w := watchBatches(t)
			total := 10*objectsPerRead + 123
			cluster := &pagedCluster{total: total, pageSize: pageSize}
			cfg := config.Default()
			_, err := Evaluate(context.Background(), Plan{Pairs: []Pair{{Old: old, New: safe}}}, &cfg, cluster)
			require.NoError(t, err)

			require.Zero(t, w.bad, "objects validated that the cluster did not serve")
			require.Len(t, w.seen, total, "every object validated")
			for id, n := range w.seen {
				require.Equal(t, 1, n, "object %d validated %d times", id, n)
			}
			largest := 0
			for _, n := range w.sizes[:len(w.sizes)-1] {
				require.GreaterOrEqual(t, n, objectsPerRead, "batches %v: too small to amortise the validators", w.sizes)
				largest = max(largest, n)
			}
			require.Less(t, max(largest, w.sizes[len(w.sizes)-1]), objectsPerRead+pageSize, "batches %v", w.sizes)
			// Between pages the check holds only the batch being filled.
			require.Less(t, cluster.maxAlive, objectsPerRead, "objects alive between pages")
		})
	}
}

package evaluation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

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

// pagingAPIServer is an apiserver stub for one custom resource type,
// /apis/example.com/v1/widgets, that pages its LIST answers as the real one
// does: at most `limit` items, a continue token that only it issues (a
// token it did not issue is refused, 410 Gone), and remainingItemCount when
// reportRemaining is set. It records every LIST it answers.
type pagingAPIServer struct {
	t       testing.TB
	widgets int
	// spec, when set, is the spec of every widget.
	spec            map[string]any
	reportRemaining bool
	// stallAfter: LISTs after this many answers wait until the client gives
	// up (0: never).
	stallAfter int
	// stallGets: CRD GETs wait until the client gives up.
	stallGets bool
	crd       *apiextv1.CustomResourceDefinition
	// viaREST: the cluster reads pages through a REST client, as
	// ClusterFromDeps builds it, not the dynamic client.
	viaREST bool

	mu    sync.Mutex
	lists []listRequest
}

type listRequest struct {
	limit int64
	cont  string
}

// maxLists stops a client that loops (for example on the first page).
const maxLists = 1000

func (s *pagingAPIServer) start() *DynamicCluster {
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	s.t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL, QPS: -1}
	client, err := dynamic.NewForConfig(cfg)
	require.NoError(s.t, err)
	c := &DynamicCluster{Client: client, PageSize: 100}
	if s.viaREST {
		core, err := kubernetes.NewForConfig(cfg)
		require.NoError(s.t, err)
		c.REST = core.Discovery().RESTClient()
	}
	return c
}

func (s *pagingAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com":
		if s.stallGets {
			<-r.Context().Done()
			return
		}
		writeJSON(w, http.StatusOK, s.crd)
	case r.URL.Path == "/apis/example.com/v1/widgets" && r.Method == http.MethodGet:
		s.list(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
			"reason": "NotFound", "code": 404, "message": r.URL.Path + " not found"})
	}
}

func (s *pagingAPIServer) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := listRequest{cont: q.Get("continue")}
	if l := q.Get("limit"); l != "" {
		var err error
		if req.limit, err = strconv.ParseInt(l, 10, 64); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	s.mu.Lock()
	s.lists = append(s.lists, req)
	n := len(s.lists)
	s.mu.Unlock()
	if n > maxLists {
		http.Error(w, "too many LISTs: the client loops", http.StatusInternalServerError)
		return
	}
	if s.stallAfter > 0 && n > s.stallAfter {
		<-r.Context().Done()
		return
	}

	start := 0
	if req.cont != "" {
		offset, ok := strings.CutPrefix(req.cont, "stub-token-")
		var err error
		if start, err = strconv.Atoi(offset); !ok || err != nil || start <= 0 || start >= s.widgets {
			writeJSON(w, http.StatusGone, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
				"reason": "Expired", "code": 410, "message": "invalid continue token " + strconv.Quote(req.cont)})
			return
		}
	}
	end := s.widgets
	if req.limit > 0 && int64(end-start) > req.limit {
		end = start + int(req.limit)
	}
	meta := map[string]any{"resourceVersion": "42"}
	if end < s.widgets {
		meta["continue"] = fmt.Sprintf("stub-token-%d", end)
		if s.reportRemaining {
			meta["remainingItemCount"] = s.widgets - end
		}
	}
	items := make([]map[string]any, 0, end-start)
	for i := start; i < end; i++ {
		item := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": widgetName(i), "namespace": "default"}}
		if s.spec != nil {
			item["spec"] = s.spec
		}
		items = append(items, item)
	}
	writeJSON(w, http.StatusOK, map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": meta, "items": items})
}

func (s *pagingAPIServer) requests() []listRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]listRequest(nil), s.lists...)
}

func widgetName(i int) string { return fmt.Sprintf("w%05d", i) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// TestListCustomResourcesReadsEveryPage: every page, in order, each object
// once, each page at most PageSize, each request continuing where the
// previous answer said.
func TestListCustomResourcesReadsEveryPage(t *testing.T) {
	crd := mustCRD(t, oldCRD)
	for _, tc := range []struct {
		name            string
		widgets         int
		reportRemaining bool
		wantPages       []int
	}{
		{name: "many pages", widgets: 1234, reportRemaining: true, wantPages: []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 34}},
		{name: "many pages, no remainingItemCount", widgets: 1234, wantPages: []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 34}},
		{name: "exactly one page", widgets: 100, wantPages: []int{100}},
		{name: "one page and one object", widgets: 101, wantPages: []int{100, 1}},
		{name: "none", widgets: 0, wantPages: nil},
		{name: "many pages via REST", widgets: 1234, wantPages: []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 34}},
		{name: "none via REST", widgets: 0, wantPages: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &pagingAPIServer{t: t, widgets: tc.widgets, reportRemaining: tc.reportRemaining,
				viaREST: strings.HasSuffix(tc.name, "via REST")}
			cluster := api.start()

			var pages []int
			var names []string
			err := cluster.ListCustomResources(context.Background(), crd, "v1", func(objs []map[string]any) error {
				pages = append(pages, len(objs))
				for _, o := range objs {
					names = append(names, o["metadata"].(map[string]any)["name"].(string))
				}
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, tc.wantPages, pages)
			want := make([]string, tc.widgets)
			for i := range want {
				want[i] = widgetName(i)
			}
			require.Equal(t, len(want), len(names))
			if len(want) > 0 {
				require.Equal(t, want, names, "every object once, in order")
			}

			reqs := api.requests()
			require.Len(t, reqs, max(len(tc.wantPages), 1))
			for i, r := range reqs {
				require.Equal(t, int64(100), r.limit, "request %d: the page size", i)
				wantContinue := ""
				if i > 0 {
					wantContinue = fmt.Sprintf("stub-token-%d", 100*i)
				}
				require.Equal(t, wantContinue, r.cont, "request %d", i)
			}
		})
	}
}

// TestListCustomResourcesReadsAhead: the next page is read while the
// current one is handled, and only one page ahead; a failure of the
// handler stops the reading and is what the call returns.
func TestListCustomResourcesReadsAhead(t *testing.T) {
	crd := mustCRD(t, oldCRD)
	api := &pagingAPIServer{t: t, widgets: 1000}
	cluster := api.start()

	waitFor := func(n int) bool {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if len(api.requests()) >= n {
				return true
			}
			time.Sleep(time.Millisecond)
		}
		return false
	}
	failure := errors.New("handler failed")
	calls := 0
	err := cluster.ListCustomResources(context.Background(), crd, "v1", func(objs []map[string]any) error {
		calls++
		require.True(t, waitFor(calls+1), "page %d handled: the next page is read meanwhile", calls)
		time.Sleep(20 * time.Millisecond)
		require.Len(t, api.requests(), calls+1, "page %d handled: only one page ahead", calls)
		if calls == 3 {
			return failure
		}
		return nil
	})
	require.ErrorIs(t, err, failure)
	require.Equal(t, 3, calls)
	time.Sleep(20 * time.Millisecond)
	require.Len(t, api.requests(), 4, "no page read after the failure")
}

// TestCountCustomResources: one LIST with limit 1 when the apiserver
// reports remainingItemCount; otherwise every page is counted.
func TestCountCustomResources(t *testing.T) {
	crd := mustCRD(t, oldCRD)
	for _, tc := range []struct {
		name            string
		widgets         int
		reportRemaining bool
		wantRequests    []listRequest
	}{
		{name: "remainingItemCount", widgets: 1234, reportRemaining: true,
			wantRequests: []listRequest{{limit: 1}}},
		{name: "no remainingItemCount: every page", widgets: 1234,
			wantRequests: append([]listRequest{{limit: 1}}, pagesFrom(1, 1234)...)},
		{name: "one", widgets: 1, reportRemaining: true, wantRequests: []listRequest{{limit: 1}}},
		{name: "none", widgets: 0, reportRemaining: true, wantRequests: []listRequest{{limit: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &pagingAPIServer{t: t, widgets: tc.widgets, reportRemaining: tc.reportRemaining}
			n, err := api.start().CountCustomResources(context.Background(), crd)
			require.NoError(t, err)
			require.Equal(t, tc.widgets, n)
			require.Equal(t, tc.wantRequests, api.requests())
		})
	}
}

// pagesFrom lists the page requests (limit 100) that read objects
// [from, total).
func pagesFrom(from, total int) []listRequest {
	var reqs []listRequest
	for off := from; off < total; off += 100 {
		reqs = append(reqs, listRequest{limit: 100, cont: fmt.Sprintf("stub-token-%d", off)})
	}
	return reqs
}

// TestDynamicClusterDeadline: the deadline of WithLiveDeadline ends real
// HTTP requests that the apiserver does not answer, and the errors name
// what was waiting.
func TestDynamicClusterDeadline(t *testing.T) {
	old, safe := mustCRD(t, oldCRD), mustCRD(t, safeCRD)

	t.Run("GET of a live CRD", func(t *testing.T) {
		api := &pagingAPIServer{t: t, stallGets: true}
		ctx, cancel := WithLiveDeadline(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := api.start().GetCRDs(ctx, []string{"widgets.example.com"})
		require.EqualError(t, err, "getting CRD widgets.example.com: deadline of 100ms (liveChecksTimeout) exceeded")
		require.ErrorIs(t, err, ErrLiveChecksTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	for _, viaREST := range []bool{false, true} {
		t.Run(fmt.Sprintf("LIST of custom resources, via REST %t", viaREST), func(t *testing.T) {
			api := &pagingAPIServer{t: t, widgets: 1000, stallAfter: 2, viaREST: viaREST}
			ctx, cancel := WithLiveDeadline(context.Background(), 100*time.Millisecond)
			defer cancel()
			cfg := config.Default()
			_, err := Evaluate(ctx, Plan{Pairs: []Pair{{Old: old, New: safe}}}, &cfg, api.start())
			require.EqualError(t, err, "listing widgets of CRD widgets.example.com at version v1: "+
				"deadline of 100ms (liveChecksTimeout) exceeded after reading 2 pages (200 custom resources)")
			require.ErrorIs(t, err, context.DeadlineExceeded)
		})
	}
}

// TestListPageViaREST: a page read through REST holds the objects the
// dynamic client gives (integers as int64, nested values), and an error
// status is the apiserver's error.
func TestListPageViaREST(t *testing.T) {
	crd := mustCRD(t, oldCRD)
	read := func(viaREST bool, widgets int) ([]map[string]any, error) {
		api := &pagingAPIServer{t: t, widgets: widgets, viaREST: viaREST,
			spec: map[string]any{"size": 2, "ratio": 0.5, "tags": []any{"a", map[string]any{"b": nil}}}}
		var all []map[string]any
		err := api.start().ListCustomResources(context.Background(), crd, "v1", func(objs []map[string]any) error {
			all = append(all, objs...)
			return nil
		})
		return all, err
	}
	viaDynamic, err := read(false, 150)
	require.NoError(t, err)
	viaREST, err := read(true, 150)
	require.NoError(t, err)
	require.Equal(t, viaDynamic, viaREST)
	require.IsType(t, int64(0), viaREST[0]["spec"].(map[string]any)["size"])

	api := &pagingAPIServer{t: t, widgets: 10, viaREST: true}
	c := api.start()
	crd.Spec.Names.Plural = "gadgets"
	err = c.ListCustomResources(context.Background(), crd, "v1", func([]map[string]any) error { return nil })
	require.True(t, apierrors.IsNotFound(err), "%v", err)
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
	readBatch = func(_ *crdupgradesafety.ObjectReader, objs []map[string]any) {
		w.sizes = append(w.sizes, len(objs))
		for _, o := range objs {
			if tr, ok := o["tracker"].(*tracker); ok {
				w.seen[tr.id]++
			} else {
				w.bad++
			}
		}
	}
	t.Cleanup(func() { readBatch = prev })
	return w
}

// pagedCluster serves `total` custom resources in pages of pageSize and,
// before each page, counts how many objects it served are still alive
// (after a garbage collection): what the caller keeps in memory.
type pagedCluster struct {
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
			"metadata": map[string]any{"name": widgetName(i), "namespace": "default"}})
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

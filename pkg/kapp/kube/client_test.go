package kube_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/crdsafety/kapp/pkg/kapp/kube/kubetest"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestListVersion(t *testing.T) {
	crd := &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{Versions: []apiextv1.CustomResourceDefinitionVersion{
		{Name: "v1alpha1", Served: false},
		{Name: "v1beta1", Served: true},
		{Name: "v1", Served: true, Storage: true},
	}}}
	require.Equal(t, "v1", kube.ListVersion(crd))
	crd.Spec.Versions[2].Served = false
	require.Equal(t, "v1beta1", kube.ListVersion(crd))
	crd.Spec.Versions[1].Served = false
	require.Equal(t, "", kube.ListVersion(crd))
}

// TestListCustomResourcesReadsEveryPage: every page, in order, each object
// once, each page at most PageSize, each request continuing where the
// previous answer said.
func TestListCustomResourcesReadsEveryPage(t *testing.T) {
	crd := testcrd.MustCRD(t, testcrd.OldCRD)
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
			api := &kubetest.APIServer{T: t, Widgets: tc.widgets, ReportRemaining: tc.reportRemaining,
				ViaREST: strings.HasSuffix(tc.name, "via REST")}
			cluster := api.Start()

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
				want[i] = kubetest.WidgetName(i)
			}
			require.Equal(t, len(want), len(names))
			if len(want) > 0 {
				require.Equal(t, want, names, "every object once, in order")
			}

			reqs := api.Requests()
			require.Len(t, reqs, max(len(tc.wantPages), 1))
			for i, r := range reqs {
				require.Equal(t, int64(100), r.Limit, "request %d: the page size", i)
				wantContinue := ""
				if i > 0 {
					wantContinue = fmt.Sprintf("stub-token-%d", 100*i)
				}
				require.Equal(t, wantContinue, r.Continue, "request %d", i)
			}
		})
	}
}

// TestListCustomResourcesReadsAhead: the next page is read while the
// current one is handled, and only one page ahead; a failure of the
// handler stops the reading and is what the call returns.
func TestListCustomResourcesReadsAhead(t *testing.T) {
	crd := testcrd.MustCRD(t, testcrd.OldCRD)
	api := &kubetest.APIServer{T: t, Widgets: 1000}
	cluster := api.Start()

	waitFor := func(n int) bool {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if len(api.Requests()) >= n {
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
		require.Len(t, api.Requests(), calls+1, "page %d handled: only one page ahead", calls)
		if calls == 3 {
			return failure
		}
		return nil
	})
	require.ErrorIs(t, err, failure)
	require.Equal(t, 3, calls)
	time.Sleep(20 * time.Millisecond)
	require.Len(t, api.Requests(), 4, "no page read after the failure")
}

// TestCountCustomResources: one LIST with limit 1 when the apiserver
// reports remainingItemCount; otherwise every page is counted.
func TestCountCustomResources(t *testing.T) {
	crd := testcrd.MustCRD(t, testcrd.OldCRD)
	for _, tc := range []struct {
		name            string
		widgets         int
		reportRemaining bool
		wantRequests    []kubetest.ListRequest
	}{
		{name: "remainingItemCount", widgets: 1234, reportRemaining: true,
			wantRequests: []kubetest.ListRequest{{Limit: 1}}},
		{name: "no remainingItemCount: every page", widgets: 1234,
			wantRequests: append([]kubetest.ListRequest{{Limit: 1}}, pagesFrom(1, 1234)...)},
		{name: "one", widgets: 1, reportRemaining: true, wantRequests: []kubetest.ListRequest{{Limit: 1}}},
		{name: "none", widgets: 0, reportRemaining: true, wantRequests: []kubetest.ListRequest{{Limit: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &kubetest.APIServer{T: t, Widgets: tc.widgets, ReportRemaining: tc.reportRemaining}
			n, err := api.Start().CountCustomResources(context.Background(), crd)
			require.NoError(t, err)
			require.Equal(t, tc.widgets, n)
			require.Equal(t, tc.wantRequests, api.Requests())
		})
	}
}

// pagesFrom lists the page requests (limit 100) that read objects
// [from, total).
func pagesFrom(from, total int) []kubetest.ListRequest {
	var reqs []kubetest.ListRequest
	for off := from; off < total; off += 100 {
		reqs = append(reqs, kubetest.ListRequest{Limit: 100, Continue: fmt.Sprintf("stub-token-%d", off)})
	}
	return reqs
}

// TestListPageViaREST: a page read through REST holds the objects the
// dynamic client gives (integers as int64, nested values), and an error
// status is the apiserver's error.
func TestListPageViaREST(t *testing.T) {
	crd := testcrd.MustCRD(t, testcrd.OldCRD)
	read := func(viaREST bool, widgets int) ([]map[string]any, error) {
		api := &kubetest.APIServer{T: t, Widgets: widgets, ViaREST: viaREST,
			Spec: map[string]any{"size": 2, "ratio": 0.5, "tags": []any{"a", map[string]any{"b": nil}}}}
		var all []map[string]any
		err := api.Start().ListCustomResources(context.Background(), crd, "v1", func(objs []map[string]any) error {
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

	api := &kubetest.APIServer{T: t, Widgets: 10, ViaREST: true}
	c := api.Start()
	crd.Spec.Names.Plural = "gadgets"
	err = c.ListCustomResources(context.Background(), crd, "v1", func([]map[string]any) error { return nil })
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}

// TestServerVersion: the apiserver's version is read once and reused
// within serverVersionTTL.
func TestServerVersion(t *testing.T) {
	api := &kubetest.APIServer{T: t}
	c := api.Start()
	for range 3 {
		info, err := c.ServerVersion(context.Background())
		require.NoError(t, err)
		require.Equal(t, "37", info.Minor)
	}
	require.Equal(t, 1, api.VersionReads)
	_, err := (&kube.Client{}).ServerVersion(context.Background())
	require.ErrorContains(t, err, "no discovery client")
}

// TestForbiddenIsTyped: a 403 from the apiserver on each read the webhook
// makes comes back as a *kube.ForbiddenError naming the rule it lacks.
func TestForbiddenIsTyped(t *testing.T) {
	crd := testcrd.MustCRD(t, testcrd.OldCRD)
	for _, tc := range []struct {
		name    string
		viaREST bool
		read    func(c *kube.Client) error
		want    kube.ForbiddenError
	}{
		{name: "list custom resources", read: func(c *kube.Client) error {
			return c.ListCustomResources(context.Background(), crd, "v1", func([]map[string]any) error { return nil })
		}, want: kube.ForbiddenError{Group: "example.com", Resource: "widgets", Verb: "list"}},
		{name: "list custom resources via REST", viaREST: true, read: func(c *kube.Client) error {
			return c.ListCustomResources(context.Background(), crd, "v1", func([]map[string]any) error { return nil })
		}, want: kube.ForbiddenError{Group: "example.com", Resource: "widgets", Verb: "list"}},
		{name: "count custom resources", read: func(c *kube.Client) error {
			_, err := c.CountCustomResources(context.Background(), crd)
			return err
		}, want: kube.ForbiddenError{Group: "example.com", Resource: "widgets", Verb: "list"}},
		{name: "get CRDs", read: func(c *kube.Client) error {
			_, err := c.GetCRDs(context.Background(), []string{crd.Name})
			return err
		}, want: kube.ForbiddenError{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verb: "get"}},
		{name: "list StorageVersionMigrations", read: func(c *kube.Client) error {
			_, err := c.ListStorageVersionMigrations(context.Background())
			return err
		}, want: kube.ForbiddenError{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations", Verb: "list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &kubetest.APIServer{T: t, Forbidden: true, ViaREST: tc.viaREST}
			err := tc.read(api.Start())
			var fe *kube.ForbiddenError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tc.want, kube.ForbiddenError{Group: fe.Group, Resource: fe.Resource, Verb: fe.Verb})
			require.True(t, apierrors.IsForbidden(err), "the apiserver's error stays the cause")
		})
	}
	// Any other failure is not one.
	api := &kubetest.APIServer{T: t}
	err := api.Start().ListCustomResources(context.Background(), crd, "v2", func([]map[string]any) error { return nil })
	require.Error(t, err)
	var fe *kube.ForbiddenError
	require.False(t, errors.As(err, &fe), "a 404 is not a missing permission: %v", err)
}

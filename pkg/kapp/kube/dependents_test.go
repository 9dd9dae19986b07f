package kube_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestDependentsOfResourceGoneSinceDiscovery: a resource that discovery
// listed but whose LIST answers 404 (its CRD deleted in between) holds no
// dependents: it is not skipped, so failMode closed does not turn it into
// an error. A resource the apiserver cannot list (500) or the identity may
// not (403) is skipped, and says which.
func TestDependentsOfResourceGoneSinceDiscovery(t *testing.T) {
	status := func(w http.ResponseWriter, code int, reason string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code})
	}
	ok := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api":
			ok(w, map[string]any{"kind": "APIVersions", "versions": []string{}})
		case "/apis":
			ok(w, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{map[string]any{
				"name": "example.com", "versions": []any{map[string]any{"groupVersion": "example.com/v1", "version": "v1"}},
				"preferredVersion": map[string]any{"groupVersion": "example.com/v1", "version": "v1"}}}})
		case "/apis/example.com/v1":
			res := func(name string) map[string]any {
				return map[string]any{"name": name, "namespaced": true, "kind": name, "verbs": []string{"list"}}
			}
			ok(w, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "example.com/v1",
				"resources": []any{res("gadgets"), res("gones"), res("brokens"), res("secrets")}})
		case "/apis/example.com/v1/gadgets":
			ok(w, map[string]any{"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "items": []any{
				map[string]any{"metadata": map[string]any{"name": "g1", "namespace": "default", "ownerReferences": []any{
					map[string]any{"apiVersion": "example.com/v1alpha1", "kind": "Widget", "name": "w", "uid": "u"}}}},
				map[string]any{"metadata": map[string]any{"name": "g2", "namespace": "default"}}}})
		case "/apis/example.com/v1/gones":
			status(w, http.StatusNotFound, "NotFound")
		case "/apis/example.com/v1/brokens":
			status(w, http.StatusInternalServerError, "InternalError")
		case "/apis/example.com/v1/secrets":
			status(w, http.StatusForbidden, "Forbidden")
		default:
			status(w, http.StatusNotFound, "NotFound")
		}
	}))
	t.Cleanup(srv.Close)
	core, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	require.NoError(t, err)
	c := &kube.Client{Discovery: core.Discovery(), REST: core.Discovery().RESTClient(), PageSize: 100}

	var found []kube.Dependent
	read, skipped, err := c.DependentsOf(context.Background(), []string{"example.com/v1alpha1"}, "Widget", func(d kube.Dependent) { found = append(found, d) })
	require.NoError(t, err)
	require.Equal(t, 2, read)
	require.Equal(t, []kube.Dependent{{Resource: "gadgets.example.com", Name: "default/g1", OwnerAPIVersion: "example.com/v1alpha1"}}, found)
	var names []string
	var forbidden []bool
	for _, s := range skipped {
		names = append(names, s.Name())
		forbidden = append(forbidden, s.Forbidden)
	}
	require.Equal(t, []string{"brokens.example.com", "secrets.example.com"}, names, "the resource gone since discovery is not skipped")
	require.Equal(t, []bool{false, true}, forbidden)
}

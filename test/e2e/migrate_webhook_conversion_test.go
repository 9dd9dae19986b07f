package e2e

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// renamingConverter serves a CRD's conversion webhook, in the test
// process, that renames fields between v1alpha1 and v1: spec.colour is
// spec.color, spec.size (a number) is spec.replicas, and v1 reuses the
// name spec.size for a value it derives ("small" below 5 replicas, else
// "large").
func renamingConverter(t *testing.T) (url string, caPEM []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review apiextv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := &apiextv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			var obj map[string]any
			if err := json.Unmarshal(raw.Raw, &obj); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			convertRenamed(obj, review.Request.DesiredAPIVersion)
			out, _ := json.Marshal(obj)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
		}
		review.Response, review.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/convert", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func convertRenamed(obj map[string]any, to string) {
	from, _ := obj["apiVersion"].(string)
	obj["apiVersion"] = to
	spec, ok := obj["spec"].(map[string]any)
	if !ok || from == to {
		return
	}
	out := map[string]any{}
	if to == group+"/v1" {
		if c, ok := spec["colour"]; ok {
			out["color"] = c
		}
		if n, ok := spec["size"].(float64); ok {
			out["replicas"] = n
			out["size"] = map[bool]string{true: "small", false: "large"}[n < 5]
		}
	} else {
		if c, ok := spec["color"]; ok {
			out["colour"] = c
		}
		if n, ok := spec["replicas"]; ok {
			out["size"] = n
		}
	}
	obj["spec"] = out
}

// renamedCRD is the CRD of that webhook, with storage at storage.
func renamedCRD(n names, url string, caPEM []byte, storage string) *unstructured.Unstructured {
	version := func(name string, props map[string]any) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": name == storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
				"spec": map[string]any{"type": "object", "properties": props}}}}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": n.CRD},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"kind": n.Kind, "listKind": n.Kind + "List", "plural": n.Plural, "singular": n.Singular},
			"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{
				"conversionReviewVersions": []any{"v1"},
				"clientConfig":             map[string]any{"url": url, "caBundle": caPEM},
			}},
			"versions": []any{
				version("v1alpha1", map[string]any{"colour": map[string]any{"type": "string"}, "size": map[string]any{"type": "integer"}}),
				version("v1", map[string]any{"color": map[string]any{"type": "string"}, "replicas": map[string]any{"type": "integer"},
					"size": map[string]any{"type": "string"}}),
			},
		},
	}}
}

// TestMigrateStorageDropsManagedFieldsOfRenamedFields (issue 37): on the
// real apiserver, with a conversion webhook that renames fields, flux's
// server-side apply entry at v1alpha1 is not relabelled to v1 (where it
// would claim .spec.colour and .spec.size, a name v1 reuses): it is
// dropped, the output names flux, and the object keeps a placeholder
// entry. flux's next apply at v1 then leaves spec.size, which the webhook
// derived and flux never set, where it is (a relabelled entry prunes it:
// the command before this change, docs/migrate.md).
func TestMigrateStorageDropsManagedFieldsOfRenamedFields(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	url, caPEM := renamingConverter(t)
	crds := e.dyn.Resource(crdGVR)
	_, err := crds.Create(tctx(t), renamedCRD(n, url, caPEM, "v1alpha1"), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = crds.Delete(tctx(t), n.CRD, metav1.DeleteOptions{}) })
	e.waitEstablished(t, n.CRD)

	applyAt := func(version string, spec map[string]any) (*unstructured.Unstructured, error) {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/" + version, "kind": n.Kind,
			"metadata": map[string]any{"name": "applied", "namespace": "default"}, "spec": spec}}
		return e.dyn.Resource(n.gvr(version)).Namespace("default").Apply(tctx(t), "applied", obj, metav1.ApplyOptions{FieldManager: "flux"})
	}
	_, err = untilServed(func() (*unstructured.Unstructured, error) {
		return applyAt("v1alpha1", map[string]any{"colour": "red", "size": int64(3)})
	})
	require.NoError(t, err)

	// v1 becomes the storage version.
	live, err := crds.Get(tctx(t), n.CRD, metav1.GetOptions{})
	require.NoError(t, err)
	next := renamedCRD(n, url, caPEM, "v1")
	next.SetResourceVersion(live.GetResourceVersion())
	_, err = crds.Update(tctx(t), next, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(e.storedVersions(t, n)) == 2 }, 30*time.Second, 200*time.Millisecond)

	r := e.migrate(t, "--crd", n.CRD, "-y", "--method=rewrite")
	require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
	require.Equal(t, []string{"v1"}, e.storedVersions(t, n))
	ri := e.dyn.Resource(n.gvr("v1")).Namespace("default")
	migrated, err := ri.Get(tctx(t), "applied", metav1.GetOptions{})
	require.NoError(t, err)
	spec, _, _ := unstructured.NestedMap(migrated.Object, "spec")
	require.Equal(t, map[string]any{"color": "red", "replicas": int64(3), "size": "small"}, spec)

	// flux, now at v1, applies the same intent: nothing it never set goes.
	got, err := applyAt("v1", map[string]any{"color": "red", "replicas": int64(3)})
	require.NoError(t, err)
	spec, _, _ = unstructured.NestedMap(got.Object, "spec")
	require.Equal(t, "small", spec["size"], "spec.size, derived by the webhook and never set by flux, is kept")

	require.Contains(t, r.out, "crd "+n.CRD+": managedFields entries dropped, not moved to v1 (their fields name other data there; "+
		"each manager owns nothing until its next apply or update): flux (Apply at "+group+"/v1alpha1) on 1 object "+
		"(conversion Webhook, and v1alpha1 declares other fields than v1)")
	mf := migrated.GetManagedFields()
	require.Len(t, mf, 1, "flux's entry dropped")
	require.Equal(t, "kapp-crd-migrate-storage", mf[0].Manager, "the placeholder")
	require.Equal(t, metav1.ManagedFieldsOperationApply, mf[0].Operation)
	require.Equal(t, group+"/v1", mf[0].APIVersion)

	// And another manager changing flux's field now conflicts again.
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": n.Kind,
		"metadata": map[string]any{"name": "applied", "namespace": "default"}, "spec": map[string]any{"color": "green"}}}
	_, err = ri.Apply(tctx(t), "applied", other, metav1.ApplyOptions{FieldManager: "other"})
	require.Truef(t, apierrors.IsConflict(err), "%v", err)
}

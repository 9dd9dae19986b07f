package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestManagedFieldsConversionChangeByClusterVersion (issue 39, item 4): a
// deploy that gives the CRD a conversion webhook while a stored object has
// managedFields entries at two versions (server-side applies at v1alpha1
// and at v1) warns on 1.35, where a write of it while the webhook is down
// drops all its managedFields (kubernetes#136919), counting and naming that
// object and not the one with entries at one version; on 1.37, which keeps
// them, there is no such warning.
func TestManagedFieldsConversionChangeByClusterVersion(t *testing.T) {
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/2-v1-storage.yaml")})
	applyAt := func(name, version, manager string, spec map[string]any) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/" + version, "kind": n.Kind,
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}}
		_, err := untilServed(func() (*unstructured.Unstructured, error) {
			return e.dyn.Resource(n.gvr(version)).Namespace("default").Apply(tctx(t), name, obj, metav1.ApplyOptions{FieldManager: manager})
		})
		require.NoError(t, err)
	}
	applyAt("multi", "v1alpha1", "flux", map[string]any{"color": "red"})
	applyAt("multi", "v1", "ops", map[string]any{"size": int64(3)})
	applyAt("single", "v1", "ops", map[string]any{"size": int64(1)})

	r := e.deploy(t, n.App, []string{crdDir(t, n, "managedfields/webhook-added.yaml")}, preflightFlag)
	minor := kubeMinor(t, e)
	if minor >= 37 {
		require.NotContainsf(t, r.out, "kubernetes#136919", "1.%d keeps managedFields: no warning expected", minor)
		return
	}
	requireFinding(t, r.out, "managedFields", "Warning", n.CRD, "conversion webhook changed",
		fmt.Sprintf("(judged for 1.%d)", minor), "kubernetes#136919", "1 of 2 stored", "default/multi (versions v1, v1alpha1)")
	line, _ := findingLine(r.out, "managedFields", "kubernetes#136919")
	require.NotContains(t, line, "default/single")
}

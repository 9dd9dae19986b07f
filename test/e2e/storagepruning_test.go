package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestStoragePruningBlocksUpdate: the second scenario of issue 31. An update
// that adds a served version (v1beta3, no conversion webhook) whose field
// spec.accessPolicy the storage version v1beta1 does not declare is blocked
// by the preflight, naming the version and the field, and nothing is
// applied. Without the check the same update applies, and a create at
// v1beta3 with accessPolicy reads back without it: the apiserver's own
// behaviour the finding describes.
func TestStoragePruningBlocksUpdate(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{crdDir(t, n, "storagepruning/1-v1beta1.yaml")}, preflightFlag)
	before := e.snapshot(t, n)

	r := e.deploy(t, n.App, []string{crdDir(t, n, "storagepruning/2-v1beta3.yaml", n.marker())}, preflightFlag)
	requireBlocked(t, r)
	requireFinding(t, r.out, "storagePruning", "v1beta3", "^.spec.accessPolicy",
		"pruned from every write through v1beta3: the storage version v1beta1 does not declare it")
	e.requireUnchanged(t, n, before)

	// Without the check: the data is lost as the finding says.
	e.deployOK(t, n.App, []string{crdDir(t, n, "storagepruning/2-v1beta3.yaml")})
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1beta3", "kind": n.Kind,
		"metadata": map[string]any{"name": "policy", "namespace": "default"},
		"spec":     map[string]any{"target": "db", "accessPolicy": "deny"}}}
	created, err := untilServed(func() (*unstructured.Unstructured, error) {
		return e.dyn.Resource(n.gvr("v1beta3")).Namespace("default").Create(tctx(t), obj, metav1.CreateOptions{})
	})
	require.NoError(t, err)
	got, err := e.dyn.Resource(n.gvr("v1beta3")).Namespace("default").Get(tctx(t), created.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	spec, _, _ := unstructured.NestedMap(got.Object, "spec")
	require.Equal(t, map[string]any{"target": "db"}, spec, "accessPolicy written through v1beta3 is pruned by the storage version")
}

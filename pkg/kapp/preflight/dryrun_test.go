package preflight

import (
	"context"
	"strings"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var gadgetCRD = strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget", "widget", "gadget").Replace(safeCRD)

// TestRunDryRunSendsWhatKappSends: each CRD change is dry-run with the
// object kapp's clusterapply sends: for an update the new CRD rebased on the
// live one (its resourceVersion and uid), for a create the new CRD, both
// with kapp's identity annotation.
func TestRunDryRunSendsWhatKappSends(t *testing.T) {
	cluster := &evaluationtest.Cluster{}
	check, _ := newCheck(t, cluster, nil)
	err := check.Run(context.Background(), deployGraph(t, "",
		[]ctlres.Resource{live(t, oldCRD)}, []ctlres.Resource{res(t, safeCRD), res(t, gadgetCRD)}))
	require.NoError(t, err)
	require.Equal(t, []string{"create gadgets.example.com", "update widgets.example.com"}, cluster.DryRunVerbs())

	sent := map[evaluation.Verb]*unstructured.Unstructured{}
	for _, d := range cluster.DryRuns {
		sent[d.Verb] = d.Obj
	}
	update := sent[evaluation.VerbUpdate]
	require.Equal(t, "42", update.GetResourceVersion(), "rebased on the live CRD")
	require.Equal(t, "uid-widgets.example.com", string(update.GetUID()))
	require.Equal(t, "v1;/apiextensions.k8s.io/CustomResourceDefinition/widgets.example.com;apiextensions.k8s.io/v1",
		update.GetAnnotations()["kapp.k14s.io/identity"])
	enum, _, _ := unstructured.NestedSlice(update.Object, "spec", "versions")
	require.Contains(t, mustJSON(t, enum), "yellow", "the new spec")

	create := sent[evaluation.VerbCreate]
	require.Empty(t, create.GetResourceVersion())
	require.Contains(t, create.GetAnnotations(), "kapp.k14s.io/identity")
}

// TestSentObjectLeavesTheResourceAlone: the identity annotation goes on the
// sent object only; kapp applies its own resource as it was.
func TestSentObjectLeavesTheResourceAlone(t *testing.T) {
	for _, yaml := range []string{safeCRD, strings.Replace(safeCRD, "  name: widgets.example.com\n",
		"  name: widgets.example.com\n  annotations: {team: a}\n", 1)} {
		r := res(t, yaml)
		before := r.DeepCopyRaw()
		sent, err := sentObject(r)
		require.NoError(t, err)
		require.Contains(t, sent.GetAnnotations(), "kapp.k14s.io/identity")
		require.Equal(t, before, r.UnstructuredObject())
	}
}

// TestRunExistsIsNotSent: a CRD kapp only waits for (kapp.k14s.io/exists)
// is neither validated nor sent.
func TestRunExistsIsNotSent(t *testing.T) {
	cluster := &evaluationtest.Cluster{}
	check, _ := newCheck(t, cluster, nil)
	placeholder := res(t, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"+
		"metadata: {name: gadgets.example.com, annotations: {kapp.k14s.io/exists: \"\"}}\n")
	err := check.Run(context.Background(), deployGraph(t, "", nil, []ctlres.Resource{placeholder}))
	require.NoError(t, err)
	require.Zero(t, cluster.Contacts)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := (&unstructured.Unstructured{Object: map[string]any{"v": v}}).MarshalJSON()
	require.NoError(t, err)
	return string(b)
}

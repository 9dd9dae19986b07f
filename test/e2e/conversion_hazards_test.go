package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The hazards of issue 39 on the real apiserver, without kapp: the old
// Widget CRD (v1 storage) with its objects, then the new one (v2 storage,
// a conversion webhook) applied with kubectl while a build of
// hack/convwebhook answers at its URL. What the apiserver does here is the
// ground truth the conversion probe must predict.

// labelWidget adds a label to a Widget through version: an update, which
// the apiserver stores at the storage version (v2), converting through
// the webhook when version is not v2.
func (e *env) labelWidget(t *testing.T, n names, version, name string) {
	t.Helper()
	ri := e.dyn.Resource(n.gvr(version)).Namespace("default")
	obj, err := ri.Get(tctx(t), name, metav1.GetOptions{})
	require.NoError(t, err)
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["written-at"] = version
	obj.SetLabels(labels)
	_, err = ri.Update(tctx(t), obj, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// requireReviewed asserts that the webhook converted the object name from
// version from to version to, in a review that succeeded.
func requireReviewed(t *testing.T, w *convWebhook, name, from, to string) {
	t.Helper()
	for _, r := range w.reviews() {
		if strings.Contains(r, name+" at "+group+"/"+from) && strings.Contains(r, " to "+group+"/"+to+": Success") {
			return
		}
	}
	t.Fatalf("the webhook converted no %s from %s to %s; its reviews:\n%s", name, from, to, strings.Join(w.reviews(), "\n"))
}

// TestConversionLosslessKeepsRenamedField: with the lossless build, every
// object reads at v2 with v1's spec.size as spec.dimensions, and at v1
// with spec.size, before and after a write that stores it at v2 (read
// back through the webhook from v2).
func TestConversionLosslessKeepsRenamedField(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.widgetsAtV1(t, n)
	w := startConvWebhook(t, buildLossless, n)
	e.applyWidgetCRD(t, n, w)

	list, err := e.dyn.Resource(n.gvr("v2")).Namespace("default").List(tctx(t), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, len(widgetNames))
	for _, item := range list.Items {
		want := v2Of(widgetSpecs[item.GetName()], true)
		spec, _, _ := unstructured.NestedMap(item.Object, "spec")
		require.Equalf(t, want, spec, "%s read at v2", item.GetName())
	}
	for _, name := range widgetNames {
		e.labelWidget(t, n, "v2", name)
	}
	e.requireWidgetSpecsAtV1(t, n, "after a write at v2")
	requireReviewed(t, w, "small", "v2", "v1")
}

// TestConversionLossyDropsField: with the lossy build, objects read at v2
// have no spec.color (the schema of v2 declares it: the webhook dropped
// it); at v1 an object still stored at v1 keeps it (no conversion), but
// after a write, through v2 or through v1 (converted to v2 for storage),
// it is gone at v1 too: the data is lost.
func TestConversionLossyDropsField(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.widgetsAtV1(t, n)
	w := startConvWebhook(t, buildLossy, n)
	e.applyWidgetCRD(t, n, w)

	list, err := e.dyn.Resource(n.gvr("v2")).Namespace("default").List(tctx(t), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, len(widgetNames))
	for _, item := range list.Items {
		spec, _, _ := unstructured.NestedMap(item.Object, "spec")
		require.Equalf(t, v2Of(widgetSpecs[item.GetName()], false), spec, "%s read at v2: no color", item.GetName())
	}
	// Not written since the update: still stored at v1, read there as is.
	spec, err := e.widgetSpec(t, n, "v1", "large")
	require.NoError(t, err)
	require.Equal(t, "blue", spec["color"], "large, stored at v1, keeps its color at v1 until written")

	e.labelWidget(t, n, "v2", "small") // stored at v2 as read there
	e.labelWidget(t, n, "v1", "large") // sent with its color, converted to v2 for storage
	requireReviewed(t, w, "large", "v1", "v2")
	for _, name := range []string{"small", "large"} {
		spec, err := e.widgetSpec(t, n, "v1", name)
		require.NoError(t, err)
		want := maps.Clone(widgetSpecs[name])
		delete(want, "color")
		require.Equalf(t, want, spec, "%s read at v1 after a write: spec.color lost", name)
	}
	requireReviewed(t, w, "small", "v2", "v1")
}

// TestConversionFailingBreaksList: with the failing build, a LIST at v2
// (the storage and preferred version) fails, naming the conversion
// webhook; a GET of an object it can convert works, one of an object it
// cannot convert fails; objects still stored at v1 read at v1 without the
// webhook.
//
// Not parallel: while the objects cannot be converted the resource cannot
// be listed, and every kapp run in the cluster (which lists every resource
// to find its app's objects) retries on it; serial tests run before the
// parallel ones start, and the cleanup (conversion None, then the CRD's
// deletion) ends it.
func TestConversionFailingBreaksList(t *testing.T) {
	e := setup(t)
	n := newNames(t)
	e.widgetsAtV1(t, n)
	w := startConvWebhook(t, buildFailing, n)
	e.applyWidgetCRD(t, n, w)

	err := e.listOnce(t, n, "v2")
	require.Error(t, err, "a LIST at v2 through the failing build")
	t.Logf("LIST at v2: %v", err)
	// A LIST served from etcd fails with the conversion error itself. The
	// watch cache lists every stored object through the webhook to
	// initialize, and while one cannot be converted it stays
	// "(re)initializing": a LIST it serves answers 429 with that, for as
	// long as the object is stored. Either way the resource cannot be
	// listed; the GETs below name the webhook.
	if !strings.Contains(err.Error(), "storage is (re)initializing") {
		require.Contains(t, err.Error(), "conversion webhook")
		require.Contains(t, err.Error(), "failed")
	}

	for _, name := range widgetNames {
		_, err := e.widgetSpec(t, n, "v2", name)
		if slices.Contains(widgetFailing, name) {
			require.Errorf(t, err, "GET %s at v2", name)
			require.Contains(t, err.Error(), "conversion webhook")
			t.Logf("GET %s at v2: %v", name, err)
		} else {
			require.NoErrorf(t, err, "GET %s at v2", name)
		}
	}
	list, err := e.dyn.Resource(n.gvr("v1")).Namespace("default").List(tctx(t), metav1.ListOptions{})
	require.NoError(t, err, "a LIST at v1 of objects stored at v1 needs no conversion")
	require.Len(t, list.Items, len(widgetNames))
	require.Contains(t, strings.Join(w.reviews(), "\n"), "cannot unmarshal string")
}

// TestConversionLossyIsNotYetBlocked recorded the gap issue 39 closes (the
// lossy update applied by kapp deploy --preflight=CRDUpgradeSafety, the
// objects read at v2 without spec.color): flipped into the blocking
// assertion, TestConversionProbeDeploy/lossy (conversion_probe_test.go).

// v2Of is a v1 spec as the v2 of the builds has it: spec.size as
// spec.dimensions, and spec.color unless the build drops it.
func v2Of(v1 map[string]any, keepColor bool) map[string]any {
	out := maps.Clone(v1)
	if size, ok := out["size"]; ok {
		out["dimensions"] = size
		delete(out, "size")
	}
	if !keepColor {
		delete(out, "color")
	}
	return out
}

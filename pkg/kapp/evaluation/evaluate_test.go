package evaluation

import (
	"context"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestEvaluateUnchangedDocument: the tools command passes the same object
// as old and new CRD when both inputs hold the same document. kapp sends no
// update for it: an old CRD the apiserver would refuse is the warning
// about the old inputs only, not also a refusal of an update. A distinct
// object with the same content is still validated as an update; a replace
// still validates the create that follows, with the old CRD's own
// validation, and reports the same as for a distinct object.
func TestEvaluateUnchangedDocument(t *testing.T) {
	invalid := strings.Replace(oldCRD, "size: {type: integer, minimum: 1}", "size: {minimum: 1}", 1)
	crd := func() Pair {
		return Pair{New: testcrd.MustCRD(t, invalid)}
	}
	run := func(p Pair) []string { return evaluateOffline(t, p) }
	const warning = "warning apiserverRejects: the old CRD is itself invalid, the apiserver would refuse to create it: " +
		"spec.versions[*].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields"

	same := crd()
	same.Old = same.New
	require.Equal(t, []string{warning}, run(same))

	distinct := crd()
	distinct.Old = crd().New
	require.Equal(t, []string{
		warning,
		"error apiserverRejects: the apiserver refuses the update: Required value: must not be empty for specified object fields",
	}, run(distinct))

	for _, strategy := range []string{StrategyAlwaysReplace, StrategyFallbackOnReplace} {
		same, distinct := crd(), crd()
		same.Old, distinct.Old = same.New, crd().New
		same.Strategy, distinct.Strategy = strategy, strategy
		got := run(same)
		require.Equal(t, run(distinct), got, strategy)
		require.Contains(t, got, "error apiserverRejects: the apiserver refuses the create that follows the delete ("+
			map[string]string{StrategyAlwaysReplace: "update strategy always-replace", StrategyFallbackOnReplace: "fallback-on-replace"}[strategy]+
			"): Required value: must not be empty for specified object fields", strategy)
	}
}

// TestEvaluateAPIServerWarnings: what the apiserver would accept with a
// warning is a warning finding, offline: a list set of objects added by an
// update, or brought by a create; not when the old CRD already had it.
func TestEvaluateAPIServerWarnings(t *testing.T) {
	withSet := strings.Replace(oldCRD, "color: {type: string, enum: [red, green, blue]}",
		"color: {type: string, enum: [red, green, blue]}\n              ports: {type: array, x-kubernetes-list-type: set, items: {type: object, x-kubernetes-map-type: atomic}}", 1)
	require.NotEqual(t, oldCRD, withSet)
	run := func(p Pair) []string { return evaluateOffline(t, p) }
	const warning = `x-kubernetes-list-type: set for items of type "object" is not supported by server-side apply or CEL validation rules`
	require.Contains(t, run(Pair{Old: testcrd.MustCRD(t, oldCRD), New: testcrd.MustCRD(t, withSet)}),
		"warning apiserverRejects: the apiserver warns on the update: "+warning)
	require.Equal(t, []string{"warning apiserverRejects: the apiserver warns on the create: " + warning},
		run(Pair{New: testcrd.MustCRD(t, withSet)}))
	for _, f := range run(Pair{Old: testcrd.MustCRD(t, withSet), New: testcrd.MustCRD(t, strings.Replace(withSet, "yellow", "", 1))}) {
		require.NotContains(t, f, "warns", "the old CRD already had the list set")
	}
}

// TestEvaluateWaiver: the waiver annotations of a new CRD (of a removed
// one) exempt the checks they name, for that CRD only, shown in the
// message; the settings passed in are not changed; an invalid waiver fails
// the run.
func TestEvaluateWaiver(t *testing.T) {
	annotate := func(doc, checks, reason string) *apiextv1.CustomResourceDefinition {
		crd := testcrd.MustCRD(t, doc)
		crd.Annotations = map[string]string{config.WaiveAnnotation: checks, config.WaiveReasonAnnotation: reason}
		return crd
	}
	cfg := config.Default()
	run := func(plan Plan) ([]string, error) {
		t.Helper()
		fs, err := Evaluate(context.Background(), plan, &cfg, nil)
		var out []string
		for _, f := range fs {
			out = append(out, f.CRD+" "+string(f.Severity)+" "+f.Check+": "+report.Message(f))
		}
		return out, err
	}
	gadgets := func(crd *apiextv1.CustomResourceDefinition) *apiextv1.CustomResourceDefinition {
		crd.Name = "gadgets.example.com"
		return crd
	}
	got, err := run(Plan{
		Pairs: []Pair{
			{Old: mustCRD(t, oldCRD), New: annotate(testcrd.UnsafeCRD, "enum", "red, green only since v2 (PR 123)")},
			{Old: gadgets(mustCRD(t, oldCRD)), New: gadgets(mustCRD(t, testcrd.UnsafeCRD))},
		},
		Removals: []Removal{{CRD: annotate(strings.Replace(oldCRD, "widgets.example.com", "gizmos.example.com", 1), "crdDeletion", "replaced by gadgets")}},
	})
	require.NoError(t, err)
	require.Equal(t, []string{
		// Data loss first.
		"gizmos.example.com warning crdDeletion: data loss: missing from the new inputs: kapp would delete the CRD with all its custom resources (exempted: waive annotation: replaced by gadgets)",
		"gadgets.example.com error enum: enum values removed: [\"blue\"]",
		"gadgets.example.com error minimum: minimum increased: 1 -> 5",
		"widgets.example.com warning enum: enum values removed: [\"blue\"] (exempted: waive annotation: red, green only since v2 (PR 123))",
		"widgets.example.com error minimum: minimum increased: 1 -> 5",
	}, got)
	require.Empty(t, cfg.Waivers, "the caller's settings")

	// The annotation on the old CRD only waives nothing: the new CRD
	// (what is applied) carries the review.
	got, err = run(Plan{Pairs: []Pair{{Old: annotate(oldCRD, "enum,minimum", "old review"), New: mustCRD(t, testcrd.UnsafeCRD)}}})
	require.NoError(t, err)
	require.Len(t, got, 2)
	for _, f := range got {
		require.Contains(t, f, " error ")
	}

	_, err = run(Plan{Pairs: []Pair{{Old: mustCRD(t, oldCRD), New: annotate(testcrd.UnsafeCRD, "enum,apiserverRejects", "why")}}})
	require.ErrorIs(t, err, config.ErrInvalidWaiver)
}

// evaluateOffline evaluates one pair of CRDs read from files, without a
// cluster, under the default settings, and renders its findings as
// "severity check: message".
func evaluateOffline(t *testing.T, p Pair) []string {
	t.Helper()
	cfg := config.Default()
	fs, err := Evaluate(context.Background(), Plan{Pairs: []Pair{p}, OldFromFiles: true}, &cfg, nil)
	require.NoError(t, err)
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Severity)+" "+f.Check+": "+report.Message(f))
	}
	return out
}

package evaluation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/report"

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
		// The annotation of the CRD being deleted does not waive the
		// loss of its objects: only the settings' acceptDataLoss does.
		"gizmos.example.com error crdDeletion: data loss: missing from the new inputs: kapp would delete the CRD with all its custom resources (not exempted: a waiver annotation cannot waive a loss of stored data; only an acceptDataLoss entry of the settings that names the loss accepts it; it read: waive annotation: replaced by gadgets)",
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

// TestEvaluateExpiredAndStaleWaivers: the settings' waivers and the
// annotations' are judged at the settings' clock. An expired one waives
// nothing and the finding says so; one of a CRD of the run that matches
// nothing is a staleWaiver warning; one of a CRD the run does not
// evaluate is not judged.
func TestEvaluateExpiredAndStaleWaivers(t *testing.T) {
	cfg := config.Default()
	cfg.Now = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	expired := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	cfg.Waivers = []config.Waiver{
		{CRD: "widgets.example.com", Checks: []string{config.CheckMinimum}, Reason: "load tests only", Owner: "team-widgets", Expires: expired, Source: config.SourceSettings},
		{CRD: "widgets.example.com", Checks: []string{config.CheckScope}, Reason: "scope moved in v1", Source: config.SourceSettings},
		{CRD: "gizmos.example.com", Reason: "not in this run", Source: config.SourceSettings},
	}
	crd := testcrd.MustCRD(t, testcrd.UnsafeCRD)
	crd.Annotations = map[string]string{config.WaiveFingerprintsAnnotation: "0123456789ab",
		config.WaiveAnnotation: "enum", config.WaiveReasonAnnotation: "blue retired", config.WaiveExpiresAnnotation: "2026-11-26"}
	fs, err := Evaluate(context.Background(), Plan{Pairs: []Pair{{Old: mustCRD(t, oldCRD), New: crd}}}, &cfg, nil)
	require.NoError(t, err)
	var got []string
	for _, f := range fs {
		got = append(got, string(f.Severity)+" "+f.Check+": "+report.Message(f))
	}
	require.Equal(t, []string{
		// CRD-level findings first: the settings' waivers, then the annotations'.
		"warning staleWaiver: stale waiver: it matches no finding of this CRD (checks scope), scope moved in v1",
		"warning staleWaiver: stale waiver annotation: it matches no finding of this CRD (fingerprint 0123456789ab), waive annotation: blue retired; until 2026-11-26",
		`warning enum: enum values removed: ["blue"] (exempted: waive annotation: blue retired; until 2026-11-26)`,
		"error minimum: minimum increased: 1 -> 5 (not exempted: the waiver expired at the end of 2026-11-25 UTC; it read: load tests only; owner team-widgets)",
	}, got)
	require.NotNil(t, fs[3].ExpiredWaiver, "a fact of the finding")
	require.Equal(t, "2026-11-25", fs[3].ExpiredWaiver.ExpiresText())
	require.Equal(t, config.CheckStaleWaiver, fs[0].Check)
	require.Equal(t, "scope moved in v1", fs[0].StaleWaiver.Reason)

	// The next day the annotation has expired too; the stale ones stay.
	cfg.Now = cfg.Now.AddDate(0, 0, 1)
	fs, err = Evaluate(context.Background(), Plan{Pairs: []Pair{{Old: mustCRD(t, oldCRD), New: crd}}}, &cfg, nil)
	require.NoError(t, err)
	require.Equal(t, "error", string(fs[2].Severity))
	require.Contains(t, report.Message(fs[2]), "(not exempted: the waiver expired at the end of 2026-11-26 UTC; it read: waive annotation: blue retired)")
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

package evaluation

import (
	"context"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/stretchr/testify/require"
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
	cfg := config.Default()
	run := func(p Pair) []string {
		t.Helper()
		fs, err := Evaluate(context.Background(), Plan{Pairs: []Pair{p}, OldFromFiles: true}, &cfg, nil)
		require.NoError(t, err)
		var out []string
		for _, f := range fs {
			out = append(out, string(f.Severity)+" "+f.Check+": "+f.Message)
		}
		return out
	}
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
	cfg := config.Default()
	run := func(p Pair) []string {
		t.Helper()
		fs, err := Evaluate(context.Background(), Plan{Pairs: []Pair{p}, OldFromFiles: true}, &cfg, nil)
		require.NoError(t, err)
		var out []string
		for _, f := range fs {
			out = append(out, string(f.Severity)+" "+f.Check+": "+f.Message)
		}
		return out
	}
	const warning = `x-kubernetes-list-type: set for items of type "object" is not supported by server-side apply or CEL validation rules`
	require.Contains(t, run(Pair{Old: testcrd.MustCRD(t, oldCRD), New: testcrd.MustCRD(t, withSet)}),
		"warning apiserverRejects: the apiserver warns on the update: "+warning)
	require.Equal(t, []string{"warning apiserverRejects: the apiserver warns on the create: " + warning},
		run(Pair{New: testcrd.MustCRD(t, withSet)}))
	for _, f := range run(Pair{Old: testcrd.MustCRD(t, withSet), New: testcrd.MustCRD(t, strings.Replace(withSet, "yellow", "", 1))}) {
		require.NotContains(t, f, "warns", "the old CRD already had the list set")
	}
}

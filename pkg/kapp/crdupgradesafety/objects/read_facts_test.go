package objects

import (
	"context"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The reader decides by the typed facts of the apiserver's errors (Type,
// Field, BadValue); where the library says something only in words, the
// words are read in one named place (errorField) and the tests here build
// the errors through the library's own code, so that an upgrade that
// changes them fails here rather than in a verdict.

// TestErrorFieldOfCombinatorErrors: kube-openapi's errors of allOf, anyOf,
// oneOf and not carry no Field and quote the field at the start of their
// detail; errorField finds it in the errors the apiserver's validator
// makes.
func TestErrorFieldOfCombinatorErrors(t *testing.T) {
	for name, schema := range map[string]string{
		"allOf": `{type: integer, allOf: [{minimum: 5}]}`,
		"anyOf": `{type: integer, anyOf: [{minimum: 5}, {maximum: 1}]}`,
		"oneOf": `{type: integer, oneOf: [{minimum: 5}, {maximum: 1}]}`,
		"not":   `{type: integer, not: {minimum: 1}}`,
	} {
		t.Run(name, func(t *testing.T) {
			root := `{type: object, properties: {spec: {type: object, properties: {x: ` + schema + `}}}}`
			errs := validation.ValidateCustomResource(nil, map[string]any{"spec": map[string]any{"x": int64(3)}}, enginetest.SchemaValidator(t, root))
			combinator := 0
			for _, e := range errs {
				require.Equal(t, "spec.x", ErrorField(e), "%v", e)
				if e.Field == nilFieldPath {
					combinator++
					require.Contains(t, e.Detail, "("+name+")")
				}
			}
			require.Equal(t, 1, combinator, "the combinator's own error names no Field: %v", errs)
		})
	}
}

// TestSkippedRulesIsTheStrategysNote: the apiserver's custom resource
// strategy notes that it skipped the CEL rules after errors that block
// them with an error of no field and no value, which skippedRules tells
// from every error of the validation, a CEL rule's included.
func TestSkippedRulesIsTheStrategysNote(t *testing.T) {
	const spec = `{type: object, properties: {mode: {type: string, enum: [a, b]}, n: {type: integer, maximum: 3},
	  s: {type: string, pattern: "^x"}, o: {type: object, properties: {k: {type: string}},
	  x-kubernetes-validations: [{rule: "self.k != 'bad'", message: "some validation rules were not checked"}]}},
	  x-kubernetes-validations: [{rule: "self.n != 2", messageExpression: "'n is ' + string(self.n)"}]}`
	s := widgetStrategy(t, enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: spec}))
	validate := func(spec map[string]any) field.ErrorList {
		return s.Validate(context.Background(), &unstructured.Unstructured{Object: enginetest.Widget("v1", "default", "w", spec)})
	}
	skipped := func(errs field.ErrorList) (n int) {
		for _, e := range errs {
			if skippedRules(e) {
				n++
			}
		}
		return n
	}

	// A blocking error (an enum): the CEL rules are skipped, and noted.
	errs := validate(map[string]any{"mode": "c", "n": int64(2), "s": "y", "o": map[string]any{"k": "bad"}})
	require.Equal(t, 1, skipped(errs), "%v", errs)
	require.True(t, skippedRules(errs[len(errs)-1]), "the note comes last: %v", errs)

	// No blocking error: the CEL rules run (one with the note's words as
	// its message, one with a messageExpression), and nothing is a note.
	errs = validate(map[string]any{"mode": "a", "n": int64(2), "s": "y", "o": map[string]any{"k": "bad"}})
	require.Len(t, errs, 3, "pattern and two rules: %v", errs)
	require.Zero(t, skipped(errs), "%v", errs)
}

// TestRejectionFactsComposeTheErrorBody: a rejection's facts (Type, the
// value refused, Detail) composed as outputs compose them ("Type: value:
// detail", the empty parts left out) are the apiserver's own words for
// the error (field.Error.ErrorBody), for the errors its validators make
// and for every constructor of package field.
func TestRejectionFactsComposeTheErrorBody(t *testing.T) {
	const spec = `{type: object, properties: {mode: {type: string, enum: [a, b]}, n: {type: integer, maximum: 3},
	  s: {type: string, pattern: "^x", maxLength: 5}, f: {type: number}, t: {type: string, format: date-time},
	  l: {type: array, maxItems: 1, items: {type: string}}, m: {type: object, x-kubernetes-map-type: granular, additionalProperties: {type: string}, maxProperties: 1},
	  set: {type: array, x-kubernetes-list-type: set, items: {type: string}},
	  o: {type: object, properties: {k: {type: string}}, x-kubernetes-validations: [{rule: "self.k != 'bad'"}]}},
	  required: [r], x-kubernetes-validations: [{rule: "self.n != 2", messageExpression: "'n is ' + string(self.n)"}]}`
	s := widgetStrategy(t, enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: spec}))
	objs := []map[string]any{
		{"mode": "c", "n": int64(7), "s": "yyyyyyy", "f": "one", "t": "soon", "l": []any{"a", "b"}, "m": map[string]any{"a": "1", "b": "2"}},
		{"mode": "a", "n": int64(2), "s": "x", "set": []any{"a", "a"}, "o": map[string]any{"k": "bad"}, "r": "here"},
	}
	var errs field.ErrorList
	for _, spec := range objs {
		errs = append(errs, s.Validate(context.Background(), &unstructured.Unstructured{Object: enginetest.Widget("v1", "default", "w", spec)})...)
	}
	p := field.NewPath("spec", "x")
	errs = append(errs, field.Invalid(p, map[string]any{"a": int64(1)}, "detail"), field.Invalid(p, nil, "null"),
		field.Invalid(p, field.OmitValueType{}, "omitted"), field.Invalid(p, true, ""), field.Invalid(p, 1.5, "float"),
		field.NotSupported(p, "z", []string{"a", "b"}), field.Duplicate(p, "a"), field.Forbidden(p, "no"),
		field.Required(p, ""), field.TooLong(p, "", 5), field.TooMany(p, 3, 2), field.TypeInvalid(p, "x", "must be an integer"),
		field.NotFound(p, "gone"), field.InternalError(p, context.Canceled))
	require.Greater(t, len(errs), 20)
	for _, e := range errs {
		ef := objectEffect{effect: finding.EffectRejected, errType: e.Type, detail: e.Detail, value: badValueText(e)}.public("w")
		composed := ef.Type
		if ef.Value != "" {
			composed += ": " + ef.Value
		}
		if ef.Detail != "" {
			composed += ": " + ef.Detail
		}
		require.Equal(t, e.ErrorBody(), composed, "%#v", e)
	}
}

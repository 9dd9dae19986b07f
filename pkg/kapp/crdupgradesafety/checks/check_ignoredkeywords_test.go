package checks

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/apivalidation"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
)

func TestIgnoredKeywords(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		// A keyword of another kind than the type's: the apiserver ignores it.
		{name: "minLength added to an array", old: `{type: array, items: {type: string}}`, new: `{type: array, items: {type: string}, minLength: 3}`, want: []string{}},
		{name: "minLength added to an integer", old: `{type: integer}`, new: `{type: integer, minLength: 3}`, want: []string{}},
		{name: "maxLength lowered on an object", old: `{type: object, maxLength: 10}`, new: `{type: object, maxLength: 1}`, want: []string{}},
		{name: "pattern added to an integer", old: `{type: integer}`, new: `{type: integer, pattern: "^a$"}`, want: []string{}},
		{name: "minItems added to a string", old: `{type: string}`, new: `{type: string, minItems: 2}`, want: []string{}},
		{name: "maxItems added to an object", old: `{type: object}`, new: `{type: object, maxItems: 0}`, want: []string{}},
		{name: "maximum added to a string", old: `{type: string}`, new: `{type: string, maximum: 5}`, want: []string{}},
		{name: "minimum raised on a boolean", old: `{type: boolean, minimum: 0}`, new: `{type: boolean, minimum: 1}`, want: []string{}},
		{name: "exclusive bounds set on a string", old: `{type: string, minimum: 1, maximum: 5}`,
			new: `{type: string, minimum: 1, maximum: 5, exclusiveMinimum: true, exclusiveMaximum: true}`, want: []string{}},
		{name: "multipleOf added to an array", old: `{type: array, items: {type: integer}}`, new: `{type: array, items: {type: integer}, multipleOf: 3}`, want: []string{}},
		{name: "minProperties added to an array", old: `{type: array, items: {type: string}}`, new: `{type: array, items: {type: string}, minProperties: 1}`, want: []string{}},
		{name: "maxProperties added to a string", old: `{type: string}`, new: `{type: string, maxProperties: 0}`, want: []string{}},
		{name: "string format added to an integer", old: `{type: integer}`, new: `{type: integer, format: email}`, want: []string{}},
		{name: "string format added to an array", old: `{type: array, items: {type: string}}`, new: `{type: array, items: {type: string}, format: date-time}`, want: []string{}},
		{name: "string format added to a number", old: `{type: number}`, new: `{type: number, format: uuid}`, want: []string{}},
		{name: "string format changed on a boolean", old: `{type: boolean, format: email}`, new: `{type: boolean, format: uuid}`, want: []string{}},
		{name: "inside array items", old: `{type: array, items: {type: integer}}`, new: `{type: array, items: {type: integer, maxLength: 1}}`, want: []string{}},
		{name: "in map values", old: `{type: object, additionalProperties: {type: boolean}}`, new: `{type: object, additionalProperties: {type: boolean, pattern: x}}`, want: []string{}},

		// The kind the keyword constrains: still reported.
		{name: "minLength added to a string", old: `{type: string}`, new: `{type: string, minLength: 3}`,
			want: []string{"error minLength v1 ^.spec.x: minLength added: (none) -> 3"}},
		{name: "minItems added to an array", old: `{type: array, items: {type: string}}`, new: `{type: array, items: {type: string}, minItems: 1}`,
			want: []string{"error minItems v1 ^.spec.x: minItems added: (none) -> 1"}},
		{name: "maximum added to an integer", old: `{type: integer}`, new: `{type: integer, maximum: 5}`,
			want: []string{"error maximum v1 ^.spec.x: maximum added: (none) -> 5"}},
		{name: "multipleOf added to a number", old: `{type: number}`, new: `{type: number, multipleOf: 0.5}`,
			want: []string{"error multipleOf v1 ^.spec.x: multipleOf (none) -> 0.5: the apiserver rejects every integer value of the field (an integer value is checked against multipleOf 0.5 truncated to 0)",
				"error multipleOf v1 ^.spec.x: multipleOf added: (none) -> 0.5"}},
		{name: "maxProperties added to an object", old: `{type: object}`, new: `{type: object, maxProperties: 2}`,
			want: []string{"error maxProperties v1 ^.spec.x: maxProperties added: (none) -> 2"}},
		{name: "pattern added to a string", old: `{type: string}`, new: `{type: string, pattern: "^a$"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern added: (none) -> "^a$": "" no longer accepted`}},

		// An untyped value holds values of every kind: every keyword applies.
		{name: "int-or-string: minLength applies to its strings", old: `{x-kubernetes-int-or-string: true}`, new: `{x-kubernetes-int-or-string: true, minLength: 2}`,
			want: []string{"error minLength v1 ^.spec.x: minLength added: (none) -> 2"}},
		{name: "int-or-string: maximum applies to its integers", old: `{x-kubernetes-int-or-string: true}`, new: `{x-kubernetes-int-or-string: true, maximum: 2}`,
			want: []string{"error maximum v1 ^.spec.x: maximum added: (none) -> 2"}},
		{name: "int-or-string: a string format applies to its strings", old: `{x-kubernetes-int-or-string: true}`, new: `{x-kubernetes-int-or-string: true, format: uuid}`,
			want: []string{`error format v1 ^.spec.x: format added: (none) -> "uuid"`}},
		{name: "untyped value: minItems applies to its arrays", old: `{x-kubernetes-preserve-unknown-fields: true}`, new: `{x-kubernetes-preserve-unknown-fields: true, minItems: 1}`,
			want: []string{"error minItems v1 ^.spec.x: minItems added: (none) -> 1"}},

		// A type change is the type check's: a keyword that applies on one
		// side only cannot reject a stored value.
		{name: "type changed with the keyword kept", old: `{type: string, minLength: 3}`, new: `{type: integer, minLength: 3}`,
			want: []string{`error type v1 ^.spec.x: type changed: "string" -> "integer"`}},
		{name: "type changed and the new type's keyword added", old: `{type: integer, minLength: 3}`, new: `{type: string, minLength: 5}`,
			want: []string{`error type v1 ^.spec.x: type changed: "integer" -> "string"`}},
		{name: "to an untyped value, the old type ignored the keyword", old: `{type: integer, minLength: 3}`,
			new: `{x-kubernetes-int-or-string: true, minLength: 5}`, want: []string{}},
	})
}

// TestIgnoredKeywordsAgreeWithAPIServer proves, with the apiserver's own
// code, which value keywords the engine may leave out for which types. For
// every type and every keyword (with a value that rejects as much as it
// can), the CRD declaring it is accepted by the apiserver's CRD validation,
// and the engine reports adding it exactly when the apiserver's schema
// validator rejects one of the sample values of that type with it that it
// accepts without it. So a keyword the engine leaves out rejects nothing,
// and one it reports rejects something: the samples are varied enough to
// show each keyword at work where it applies.
func TestIgnoredKeywordsAgreeWithAPIServer(t *testing.T) {
	samples := map[string][]any{
		"string":  {"", "a", "abcdefghijklmnop", "x@example.com", "0", "2006-01-02T15:04:05Z"},
		"integer": {int64(0), int64(-5), int64(7), int64(1 << 40)},
		"number":  {int64(0), 0.5, -3.25, 1e300},
		"boolean": {true, false},
		"array":   {[]any{}, []any{"a", "b", "a"}, []any{"q"}},
		"object":  {map[string]any{}, map[string]any{"a": "b", "c": "d"}},
	}
	types := []string{"string", "integer", "number", "boolean", "array", "object"}
	keywords := []string{
		"minLength: 100", "maxLength: 0", `pattern: "^$"`,
		"minimum: 1e301", "maximum: -1e301", "minimum: 0.5, exclusiveMinimum: true", "maximum: 0, exclusiveMaximum: true", "multipleOf: 7.3",
		"minItems: 100", "maxItems: 0", "minProperties: 100", "maxProperties: 0",
		"format: email", "format: date-time", "format: uuid", "format: int32", "format: float",
	}
	items := map[string]string{"array": ", items: {type: string}", "object": ", x-kubernetes-preserve-unknown-fields: true"}
	for _, typ := range types {
		for _, kw := range keywords {
			t.Run(typ+"/"+kw, func(t *testing.T) {
				base := "type: " + typ + items[typ]
				old, new := "{"+base+"}", "{"+base+", "+kw+"}"
				if errs := apivalidation.ValidateCRD(context.Background(), nil, enginetest.CRDWithField(t, new)); len(errs) > 0 {
					t.Fatalf("the apiserver refuses %s: %v", new, errs)
				}
				without, with := enginetest.SchemaValidator(t, old), enginetest.SchemaValidator(t, new)
				var rejected []string
				for _, v := range samples[typ] {
					if len(validation.ValidateCustomResource(nil, v, without)) > 0 {
						t.Fatalf("%#v is not a valid %s", v, typ)
					}
					if errs := validation.ValidateCustomResource(nil, v, with); len(errs) > 0 {
						rejected = append(rejected, fmt.Sprintf("%#v: %v", v, errs.ToAggregate()))
					}
				}
				findings := Compare(enginetest.CRDWithField(t, old), enginetest.CRDWithField(t, new), enginetest.Ptr(config.Default()))
				switch {
				case len(findings) == 0 && len(rejected) > 0:
					t.Errorf("no finding, but the apiserver rejects %s", strings.Join(rejected, "; "))
				case len(findings) > 0 && len(rejected) == 0:
					t.Errorf("findings %q, but the apiserver rejects no sample value", enginetest.Render(findings))
				}
			})
		}
	}
}

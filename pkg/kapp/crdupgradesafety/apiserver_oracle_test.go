package crdupgradesafety

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// apiserverWrite runs a custom resource through what the apiserver does to
// it on a write under a version's schema: prune unknown fields and the
// nulls the schema does not allow (unless the CRD sets
// spec.preserveUnknownFields), apply defaults, then validate it
// (OpenAPI schema, embedded apiVersion/kind/metadata, list sets and maps,
// CEL rules), in the order of the apiextensions-apiserver's handler and
// strategy. It returns the object as it would be stored and the errors.
func apiserverWrite(tb testing.TB, s *apiextv1.JSONSchemaProps, keepAll bool, obj map[string]any) (map[string]any, field.ErrorList) {
	tb.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		tb.Fatalf("converting schema: %v", err)
	}
	structural, err := schema.NewStructural(internal)
	if err != nil {
		tb.Fatalf("schema is not structural: %v", err)
	}
	out := runtime.DeepCopyJSON(obj)
	if !keepAll {
		pruning.Prune(out, structural, true)
		defaulting.PruneNonNullableNullsWithoutDefaults(out, structural)
	}
	defaulting.Default(out, structural)
	validator, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		tb.Fatalf("building the schema validator: %v", err)
	}
	errs := validation.ValidateCustomResource(nil, out, validator)
	errs = append(errs, objectmeta.Validate(context.Background(), nil, out, structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, structural, out)...)
	celErrs, _ := cel.NewValidator(structural, true, celconfig.PerCallLimit).
		Validate(context.Background(), nil, structural, out, nil, celconfig.RuntimeCELCostBudget)
	return out, append(errs, celErrs...)
}

// parseObject parses a custom resource written in YAML into the form the
// apiserver's JSON decoding gives: integers as int64, other numbers as
// float64.
func parseObject(tb testing.TB, y string) map[string]any {
	tb.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		tb.Fatalf("parsing object %q: %v", y, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		tb.Fatalf("decoding object %q: %v", y, err)
	}
	return fromJSONNumbers(v).(map[string]any)
}

func fromJSONNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = fromJSONNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = fromJSONNumbers(e)
		}
	}
	return v
}

// widgetX is a custom resource of a specX schema whose spec.x is x.
func widgetX(x string) string {
	return `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: default}, spec: {x: ` + x + `}}`
}

// TestFindingsAgainstApiserver proves findings real and safe cases safe
// with the apiserver's own code as the oracle. Every sample object is
// valid, and stored as it is, under the old schema. When the engine reports
// an error finding, some sample must be rejected, pruned or defaulted
// differently under the new schema (the finding is real). When it reports
// none, every sample must stay valid and unchanged (nothing valid becomes
// invalid). Warnings (server-side apply granularity) must leave every
// sample valid and unchanged too: they are not about data.
func TestFindingsAgainstApiserver(t *testing.T) {
	cases := []struct {
		name                 string
		old, new             string // root schemas
		oldKeepAll, keepAll  bool   // spec.preserveUnknownFields of old and new
		objects              []string
		wantErrs, wantWarned []string // check IDs of error and warning findings
	}{
		// Combinators by meaning.
		{name: "oneOf branch bound raised", old: enginetest.SpecX(`{type: integer, oneOf: [{maximum: 5}, {minimum: 8}]}`),
			new: enginetest.SpecX(`{type: integer, oneOf: [{maximum: 10}, {minimum: 8}]}`), objects: []string{widgetX("9"), widgetX("3")},
			wantErrs: []string{config.CheckOneOf}},
		{name: "oneOf branch required dropped", old: enginetest.SpecX(`{type: object, properties: {a: {type: string}, b: {type: string}, c: {type: string}}, oneOf: [{required: [a, c]}, {required: [b]}]}`),
			new:     enginetest.SpecX(`{type: object, properties: {a: {type: string}, b: {type: string}, c: {type: string}}, oneOf: [{required: [a]}, {required: [b]}]}`),
			objects: []string{widgetX("{a: xa, b: yb}"), widgetX("{a: x, c: z}")}, wantErrs: []string{config.CheckOneOf}},
		{name: "oneOf branch emptied", old: enginetest.SpecX(`{type: object, properties: {a: {type: string}, b: {type: string}}, oneOf: [{required: [a]}, {required: [b]}]}`),
			new:     enginetest.SpecX(`{type: object, properties: {a: {type: string}, b: {type: string}}, oneOf: [{}, {required: [b]}]}`),
			objects: []string{widgetX("{b: yb}"), widgetX("{a: x}")}, wantErrs: []string{config.CheckOneOf}},
		{name: "oneOf branch tightened", old: enginetest.SpecX(`{type: integer, oneOf: [{maximum: 5}, {minimum: 8}]}`),
			new: enginetest.SpecX(`{type: integer, oneOf: [{maximum: 4}, {minimum: 8}]}`), objects: []string{widgetX("5"), widgetX("9")},
			wantErrs: []string{config.CheckMaximum}},
		{name: "oneOf branches reordered", old: enginetest.SpecX(`{type: integer, oneOf: [{maximum: 5}, {minimum: 8}]}`),
			new: enginetest.SpecX(`{type: integer, oneOf: [{minimum: 8}, {maximum: 5}]}`), objects: []string{widgetX("5"), widgetX("9")}},
		{name: "anyOf branch loosened", old: enginetest.SpecX(`{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`),
			new: enginetest.SpecX(`{type: integer, anyOf: [{minimum: 4}, {maximum: 0}]}`), objects: []string{widgetX("5"), widgetX("0"), widgetX("-3"), widgetX("100")}},
		{name: "anyOf branch added", old: enginetest.SpecX(`{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`),
			new: enginetest.SpecX(`{type: integer, anyOf: [{minimum: 5}, {maximum: 0}, {multipleOf: 3}]}`), objects: []string{widgetX("5"), widgetX("-1")}},
		{name: "anyOf branch removed", old: enginetest.SpecX(`{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`),
			new: enginetest.SpecX(`{type: integer, anyOf: [{minimum: 5}]}`), objects: []string{widgetX("5"), widgetX("-1")},
			wantErrs: []string{config.CheckAnyOf}},
		{name: "anyOf branch removed that another covers", old: enginetest.SpecX(`{type: integer, anyOf: [{minimum: 5}, {minimum: 10}, {maximum: 0}]}`),
			new: enginetest.SpecX(`{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`), objects: []string{widgetX("5"), widgetX("12"), widgetX("-1")}},
		{name: "allOf branch removed", old: enginetest.SpecX(`{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`),
			new: enginetest.SpecX(`{type: integer, allOf: [{maximum: 9}]}`), objects: []string{widgetX("1"), widgetX("9")}},
		{name: "allOf branch added", old: enginetest.SpecX(`{type: integer, allOf: [{minimum: 1}]}`),
			new: enginetest.SpecX(`{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`), objects: []string{widgetX("1"), widgetX("10")},
			wantErrs: []string{config.CheckAllOf}},
		{name: "not tightened inside", old: enginetest.SpecX(`{type: integer, not: {maximum: 5}}`), new: enginetest.SpecX(`{type: integer, not: {maximum: 4}}`),
			objects: []string{widgetX("6"), widgetX("100")}},
		{name: "not loosened inside", old: enginetest.SpecX(`{type: integer, not: {maximum: 4}}`), new: enginetest.SpecX(`{type: integer, not: {maximum: 5}}`),
			objects: []string{widgetX("5"), widgetX("6")}, wantErrs: []string{config.CheckNot}},

		// A map turned into an object that keeps unknown fields.
		{name: "map to preserve-unknown-fields with typed properties", old: enginetest.SpecX(`{type: object, additionalProperties: {type: string}}`),
			new:     enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: integer}}}`),
			objects: []string{widgetX("{a: xa, b: yb}")}, wantErrs: []string{config.CheckType}},
		{name: "map to preserve-unknown-fields with compatible properties", old: enginetest.SpecX(`{type: object, additionalProperties: {type: string}}`),
			new:     enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}`),
			objects: []string{widgetX("{a: xa, b: yb}")}},
		{name: "map to preserve-unknown-fields", old: enginetest.SpecX(`{type: object, additionalProperties: {type: string}}`),
			new:     enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true}`),
			objects: []string{widgetX("{a: xa, b: yb}")}},

		// New properties where stored objects may already hold data.
		{name: "property added where unknown fields were kept", old: enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {k: {type: string}}}`),
			new:     enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {k: {type: string}, num: {type: integer}}}`),
			objects: []string{widgetX("{k: a, num: text}"), widgetX("{k: a}")}, wantErrs: []string{config.CheckType}},
		{name: "object property added where unknown fields were kept", old: enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true}`),
			new:     enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {num: {type: object, properties: {a: {type: string}}}}}`),
			objects: []string{widgetX("{num: {a: xa, b: yb}}")}, wantErrs: []string{config.CheckPreserveUnknownFields, config.CheckType}},
		{name: "property accepting anything added where unknown fields were kept", old: enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true}`),
			new:     enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {num: {x-kubernetes-preserve-unknown-fields: true, nullable: true}}}`),
			objects: []string{widgetX("{num: {a: xa}}"), widgetX("{num: 3}"), widgetX("{num: null}")}},
		{name: "property accepting anything but null added where unknown fields were kept", old: enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true}`),
			new:     enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {num: {x-kubernetes-preserve-unknown-fields: true}}}`),
			objects: []string{widgetX("{num: {a: xa}}"), widgetX("{num: null}")}, wantErrs: []string{config.CheckNullable}},
		{name: "property added under a CRD that keeps unknown fields", oldKeepAll: true, keepAll: true,
			old:     `{type: object, properties: {spec: {type: object, properties: {k: {type: string}}}}}`,
			new:     `{type: object, properties: {spec: {type: object, properties: {k: {type: string}, z: {type: integer}}}}}`,
			objects: []string{`{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, spec: {k: a, z: text}}`}, wantErrs: []string{config.CheckType}},
		{name: "spec.preserveUnknownFields true -> false", oldKeepAll: true,
			old:     `{type: object, properties: {spec: {type: object, properties: {k: {type: string}}}}}`,
			new:     `{type: object, properties: {spec: {type: object, properties: {k: {type: string}}}}}`,
			objects: []string{`{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, spec: {k: a, u: kept}}`}, wantErrs: []string{config.CheckPreserveUnknownFields}},
		{name: "property added where nothing was kept", old: enginetest.SpecX(`{type: object, properties: {k: {type: string}}}`),
			new:     enginetest.SpecX(`{type: object, properties: {k: {type: string}, num: {type: integer}}}`),
			objects: []string{widgetX("{k: a}")}},

		// metadata: every object has it, whatever the schema declares.
		{name: "maxLength added on metadata.name", old: `{type: object, properties: {metadata: {type: object}}}`,
			new:     `{type: object, properties: {metadata: {type: object, properties: {name: {type: string, maxLength: 5}}}}}`,
			objects: []string{`{apiVersion: example.com/v1, kind: Widget, metadata: {name: a-long-name}}`}, wantErrs: []string{config.CheckMaxLength}},
		{name: "metadata declared with a constraint where the old schema had none", old: `{type: object, properties: {spec: {type: object}}}`,
			new:     `{type: object, properties: {metadata: {type: object, properties: {name: {type: string, pattern: "^a"}}}, spec: {type: object}}}`,
			objects: []string{`{apiVersion: example.com/v1, kind: Widget, metadata: {name: bcd}, spec: {}}`}, wantErrs: []string{config.CheckPattern}},
		{name: "metadata.name constraint removed", old: `{type: object, properties: {metadata: {type: object, properties: {name: {type: string, maxLength: 5}}}}}`,
			new:     `{type: object, properties: {metadata: {type: object}}}`,
			objects: []string{`{apiVersion: example.com/v1, kind: Widget, metadata: {name: abc, labels: {a: b}}}`}},

		// x-kubernetes-embedded-resource.
		{name: "embedded resource added", old: enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true}`),
			new:     enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-embedded-resource: true}`),
			objects: []string{widgetX("{replicas: 1}")}, wantErrs: []string{config.CheckEmbeddedResource}},
		{name: "embedded resource removed, unknown fields kept", old: enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-embedded-resource: true}`),
			new:     enginetest.SpecX(`{type: object, x-kubernetes-preserve-unknown-fields: true}`),
			objects: []string{widgetX("{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: {a: b}}, data: {k: v}}")}},
		{name: "embedded resource removed, fields pruned", old: enginetest.SpecX(`{type: object, x-kubernetes-embedded-resource: true, properties: {data: {type: object, x-kubernetes-preserve-unknown-fields: true}}}`),
			new:     enginetest.SpecX(`{type: object, properties: {data: {type: object, x-kubernetes-preserve-unknown-fields: true}}}`),
			objects: []string{widgetX("{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: v}}")}, wantErrs: []string{config.CheckEmbeddedResource}},

		// Server-side apply granularity is not data.
		{name: "map type made atomic", old: enginetest.SpecX(`{type: object, properties: {name: {type: string}}}`),
			new:     enginetest.SpecX(`{type: object, x-kubernetes-map-type: atomic, properties: {name: {type: string}}}`),
			objects: []string{widgetX("{name: a}")}, wantWarned: []string{config.CheckMapType}},
		{name: "list type set -> atomic", old: enginetest.SpecX(`{type: array, x-kubernetes-list-type: set, items: {type: string}}`),
			new: enginetest.SpecX(`{type: array, items: {type: string}}`), objects: []string{widgetX("[a, b]")}, wantWarned: []string{config.CheckListType}},
		{name: "list type map -> atomic", old: enginetest.SpecX(`{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, required: [name], properties: {name: {type: string}, v: {type: string}}}}`),
			new:     enginetest.SpecX(`{type: array, items: {type: object, required: [name], properties: {name: {type: string}, v: {type: string}}}}`),
			objects: []string{widgetX("[{name: a, v: x}, {name: b, v: x}]")}, wantWarned: []string{config.CheckListType}},
		{name: "list type atomic -> set", old: enginetest.SpecX(`{type: array, items: {type: string}}`),
			new: enginetest.SpecX(`{type: array, x-kubernetes-list-type: set, items: {type: string}}`), objects: []string{widgetX("[a, a]")},
			wantErrs: []string{config.CheckListType}},
		{name: "list map keys changed", old: enginetest.SpecX(`{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name, port], items: {type: object, required: [name, port], properties: {name: {type: string}, port: {type: integer}}}}`),
			new:     enginetest.SpecX(`{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, required: [name, port], properties: {name: {type: string}, port: {type: integer}}}}`),
			objects: []string{widgetX("[{name: a, port: 1}, {name: a, port: 2}]")}, wantErrs: []string{config.CheckListType}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, new := enginetest.OracleCRD(t, tc.old, tc.oldKeepAll), enginetest.OracleCRD(t, tc.new, tc.keepAll)
			for _, crd := range []*apiextv1.CustomResourceDefinition{old, new} {
				if errs := validateCRD(t, crd); len(errs) > 0 {
					t.Fatalf("invalid CRD in the case: %s", strings.Join(errs, "; "))
				}
			}
			fs := Compare(old, new, nil)
			var gotErrs, gotWarned []string
			for _, f := range fs {
				if f.Severity == finding.SeverityError {
					gotErrs = append(gotErrs, f.Check)
				} else {
					gotWarned = append(gotWarned, f.Check)
				}
			}
			if !reflect.DeepEqual(uniqueSorted(gotErrs), uniqueSorted(tc.wantErrs)) || !reflect.DeepEqual(uniqueSorted(gotWarned), uniqueSorted(tc.wantWarned)) {
				t.Fatalf("findings: errors %v, warnings %v; want errors %v, warnings %v\n%s",
					uniqueSorted(gotErrs), uniqueSorted(gotWarned), tc.wantErrs, tc.wantWarned, enginetest.GoldenText(fs))
			}

			oldSchema, newSchema := checks.VersionSchema(&old.Spec.Versions[0]), checks.VersionSchema(&new.Spec.Versions[0])
			broken := 0
			for _, y := range tc.objects {
				obj := parseObject(t, y)
				stored, errs := apiserverWrite(t, oldSchema, tc.oldKeepAll, obj)
				if len(errs) > 0 {
					t.Fatalf("sample %s is not valid under the old schema: %v", y, errs.ToAggregate())
				}
				if !reflect.DeepEqual(stored, obj) {
					t.Fatalf("sample %s is not stored as it is under the old schema: %v", y, stored)
				}
				after, errs := apiserverWrite(t, newSchema, tc.keepAll, stored)
				switch {
				case len(errs) > 0:
					t.Logf("sample %s rejected under the new schema: %v", y, errs.ToAggregate())
					broken++
				case !reflect.DeepEqual(after, stored):
					t.Logf("sample %s changed under the new schema: %v", y, after)
					broken++
				}
			}
			switch {
			case len(tc.wantErrs) > 0 && broken == 0:
				t.Errorf("the engine reports %v, but the apiserver accepts every sample unchanged: the finding is not proven", tc.wantErrs)
			case len(tc.wantErrs) == 0 && broken > 0:
				t.Errorf("the engine reports no error, but the apiserver rejects or changes %d samples", broken)
			}
		})
	}
}

func uniqueSorted(ids []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

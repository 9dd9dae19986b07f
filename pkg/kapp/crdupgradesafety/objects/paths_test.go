package objects

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// TestErrorFieldOfRangeErrors: the numeric range errors of the 1.37
// library (kube-openapi's IsValueValidAgainstRange) carry no Field and
// name the field at the end of their detail; errorField finds it, for the
// value and for each constraint that does not fit the type and format,
// and schemaPathOf turns it into the schema path the findings use. The
// errors are the apiserver validator's own.
func TestErrorFieldOfRangeErrors(t *testing.T) {
	cases := []struct {
		name, schema string
		obj          map[string]any
		wantDetail   string // a prefix of the only error's detail
		wantField    string
		wantPath     schemapath.Path
	}{
		{name: "int32 value", schema: `{type: integer, format: int32}`,
			obj:        map[string]any{"x": int64(3_000_000_000)},
			wantDetail: "Checked value must be of type integer with format int32 in spec.x", wantField: "spec.x", wantPath: "^.spec.x"},
		{name: "float value", schema: `{type: number, format: float}`,
			obj:        map[string]any{"x": 1e300},
			wantDetail: "Checked value must be of type number with format float in spec.x", wantField: "spec.x", wantPath: "^.spec.x"},
		{name: "int32 list item", schema: `{type: array, items: {type: integer, format: int32}}`,
			obj:        map[string]any{"x": []any{int64(1), int64(3_000_000_000)}},
			wantDetail: "Checked value must be of type integer with format int32 in spec.x[1]", wantField: "spec.x[1]", wantPath: "^.spec.x[*]"},
		{name: "int32 map value", schema: `{type: object, additionalProperties: {type: integer, format: int32}}`,
			obj:        map[string]any{"x": map[string]any{"a.b": int64(3_000_000_000)}},
			wantDetail: "Checked value must be of type integer with format int32 in spec.x.a.b", wantField: "spec.x.a.b", wantPath: "^.spec.x{*}"},
		{name: "fractional minimum on an integer", schema: `{type: integer, minimum: 0.5}`,
			obj:        map[string]any{"x": int64(3)},
			wantDetail: "Minimum boundary value must be of type integer (default format) in spec.x", wantField: "spec.x", wantPath: "^.spec.x"},
		{name: "maximum beyond int32", schema: `{type: integer, format: int32, maximum: 10000000000}`,
			obj:        map[string]any{"x": int64(3)},
			wantDetail: "Maximum boundary value must be of type integer with format int32 in spec.x", wantField: "spec.x", wantPath: "^.spec.x"},
		{name: "fractional multipleOf on an integer", schema: `{type: integer, multipleOf: 0.5}`,
			obj:        map[string]any{"x": int64(3)},
			wantDetail: "MultipleOf value must be of type integer (default format) in spec.x", wantField: "spec.x", wantPath: "^.spec.x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := `{type: object, properties: {spec: {type: object, properties: {x: ` + tc.schema + `}}}}`
			errs := validation.ValidateCustomResource(nil, map[string]any{"spec": tc.obj}, enginetest.SchemaValidator(t, root))
			require.Len(t, errs, 1, "%v", errs)
			e := errs[0]
			require.Equal(t, "<nil>", e.Field, "the range errors name no Field")
			require.Contains(t, e.Detail, tc.wantDetail)
			require.Equal(t, tc.wantField, ErrorField(e))
			require.Equal(t, tc.wantPath, schemaPathOf(structuralOf(t, root), ErrorField(e)))
		})
	}
	t.Run("other errors", func(t *testing.T) {
		require.Equal(t, "spec.x", ErrorField(field.Invalid(field.NewPath("spec", "x"), 1, "must be less than 0")))
		require.Equal(t, "spec.x", ErrorField(&field.Error{Type: field.ErrorTypeInvalid, Field: "<nil>", Detail: `"spec.x" must validate all the schemas (allOf)`}))
		require.Empty(t, ErrorField(&field.Error{Type: field.ErrorTypeInvalid, Field: "<nil>", Detail: "Checked something else in spec.x"}))
	})
}

// structuralOf is the structural schema of a schema (YAML).
func structuralOf(t *testing.T, schemaYAML string) *structuralschema.Structural {
	t.Helper()
	var v1 apiextv1.JSONSchemaProps
	require.NoError(t, yaml.UnmarshalStrict([]byte(schemaYAML), &v1))
	internal, err := internalSchemaOf(&v1)
	require.NoError(t, err)
	s, err := structuralschema.NewStructural(internal)
	require.NoError(t, err)
	return s
}

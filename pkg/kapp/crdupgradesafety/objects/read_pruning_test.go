package objects

import (
	"slices"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"sigs.k8s.io/yaml"
)

// TestPrunedFieldsAgreeWithAPIServer proves PrunedFields with the
// apiserver's structural pruning (what it applies to an object converted to
// a version under conversion None): an object that sets every field schema
// from declares (and an unknown field where from keeps them, an entry where
// from is a map) loses exactly the fields PrunedFields names when pruned by
// schema to.
func TestPrunedFieldsAgreeWithAPIServer(t *testing.T) {
	cases := []struct{ name, from, to string }{
		{"same schema", `{type: object, properties: {spec: {type: object, properties: {a: {type: string}}}}}`,
			`{type: object, properties: {spec: {type: object, properties: {a: {type: string}}}}}`},
		{"a field the target lacks", `{type: object, properties: {spec: {type: object, properties: {target: {type: string}, accessPolicy: {type: string}}}}}`,
			`{type: object, properties: {spec: {type: object, properties: {target: {type: string}}}}}`},
		{"nested in list items and maps", `{type: object, properties: {spec: {type: object, properties: {
			items: {type: array, items: {type: object, properties: {a: {type: string}, b: {type: integer}}}},
			m: {type: object, additionalProperties: {type: object, properties: {x: {type: string}, y: {type: string}}}}}}}}`,
			`{type: object, properties: {spec: {type: object, properties: {
			items: {type: array, items: {type: object, properties: {a: {type: string}}}},
			m: {type: object, additionalProperties: {type: object, properties: {x: {type: string}}}}}}}}`},
		{"the target keeps unknown fields", `{type: object, properties: {spec: {type: object, properties: {a: {type: string}, b: {type: string}}}}}`,
			`{type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}}}`},
		{"the target holds the fields as map entries", `{type: object, properties: {spec: {type: object, properties: {a: {type: string}, b: {type: string}}}}}`,
			`{type: object, properties: {spec: {type: object, additionalProperties: {type: string}}}}`},
		{"unknown fields the target prunes", `{type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}}}`,
			`{type: object, properties: {spec: {type: object, properties: {a: {type: string}}}}}`},
		{"map entries the target prunes", `{type: object, properties: {spec: {type: object, properties: {labels: {type: object, additionalProperties: {type: string}}}}}}`,
			`{type: object, properties: {spec: {type: object, properties: {labels: {type: object, properties: {app: {type: string}}}}}}}`},
		{"a whole subtree", `{type: object, properties: {spec: {type: object, properties: {a: {type: string}}}, status: {type: object, properties: {ready: {type: boolean}}}}}`,
			`{type: object, properties: {spec: {type: object, properties: {a: {type: string}}}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from, to := schemaOf(t, tc.from), schemaOf(t, tc.to)
			obj := fullObject(from, true).(map[string]any)
			pruned := finding.DeepCopyJSON(obj).(map[string]any)
			structuralpruning.Prune(pruned, structuralFrom(t, to), true)
			var lost []schemapath.Path
			lostPaths(obj, pruned, from, schemapath.Root, &lost)
			got := checks.PrunedFields(from, to)
			slices.Sort(got)
			slices.Sort(lost)
			require.Equal(t, lost, got, "PrunedFields against the apiserver's pruning")
		})
	}
}

func structuralFrom(t *testing.T, s *apiextv1.JSONSchemaProps) *structuralschema.Structural {
	t.Helper()
	internal, err := internalSchemaOf(s)
	require.NoError(t, err)
	st, err := structuralschema.NewStructural(internal)
	require.NoError(t, err)
	return st
}

func schemaOf(t *testing.T, y string) *apiextv1.JSONSchemaProps {
	t.Helper()
	var s apiextv1.JSONSchemaProps
	require.NoError(t, yaml.UnmarshalStrict([]byte(y), &s))
	return &s
}

// fullObject is a value that sets every field s declares, an unknown field
// where s keeps them and an entry where s is a map.
func fullObject(s *apiextv1.JSONSchemaProps, root bool) any {
	switch {
	case s == nil:
		return "x"
	case s.Type == "array":
		if s.Items == nil {
			return []any{}
		}
		return []any{fullObject(s.Items.Schema, false)}
	case s.Type == "object" || len(s.Properties) > 0:
		m := map[string]any{}
		for name, p := range s.Properties {
			m[name] = fullObject(&p, false)
		}
		if checks.IsTrue(s.XPreserveUnknownFields) {
			m["unknownField"] = "u"
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			m["someKey"] = fullObject(s.AdditionalProperties.Schema, false)
		}
		if root {
			m["apiVersion"], m["kind"] = "example.com/v1", "Widget"
		}
		return m
	case s.Type == "integer":
		return int64(1)
	case s.Type == "boolean":
		return true
	}
	return "x"
}

// lostPaths lists, as schema paths of from, the topmost values of before
// that after lacks.
func lostPaths(before, after any, from *apiextv1.JSONSchemaProps, at schemapath.Path, out *[]schemapath.Path) {
	switch b := before.(type) {
	case map[string]any:
		a, _ := after.(map[string]any)
		keys := make([]string, 0, len(b))
		for k := range b {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			var child *apiextv1.JSONSchemaProps
			var p schemapath.Path
			if from != nil {
				if prop, ok := from.Properties[k]; ok {
					child, p = &prop, at.Child(k)
				} else if from.AdditionalProperties != nil && from.AdditionalProperties.Schema != nil {
					child, p = from.AdditionalProperties.Schema, at.Values()
				}
			}
			av, ok := a[k]
			if !ok {
				if p == "" {
					p = at // an unknown field: the object prunes it
				}
				if !slices.Contains(*out, p) {
					*out = append(*out, p)
				}
				continue
			}
			if p != "" {
				lostPaths(b[k], av, child, p, out)
			}
		}
	case []any:
		a, _ := after.([]any)
		for i := range b {
			if i < len(a) && from != nil && from.Items != nil {
				lostPaths(b[i], a[i], from.Items.Schema, at.Items(), out)
			}
		}
	}
}

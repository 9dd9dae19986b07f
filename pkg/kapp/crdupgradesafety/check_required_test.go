package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRequired(t *testing.T) {
	const ab = `properties: {a: {type: string}, b: {type: string}}`
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: object, required: [a], ` + ab + `}`, new: `{type: object, required: [a], ` + ab + `}`, want: []string{}},
		{name: "existing field made required", old: `{type: object, ` + ab + `}`, new: `{type: object, required: [a], ` + ab + `}`,
			want: []string{`error required v1 ^.spec.x: new required fields: ["a"]`}},
		{name: "another field made required", old: `{type: object, required: [a], ` + ab + `}`, new: `{type: object, required: [a, b], ` + ab + `}`,
			want: []string{`error required v1 ^.spec.x: new required fields: ["b"]`}},
		{name: "new required fields, sorted", old: `{type: object, properties: {a: {type: string}}}`,
			new:  `{type: object, required: [c, b], properties: {a: {type: string}, b: {type: string}, c: {type: string}}}`,
			want: []string{`error required v1 ^.spec.x: new required fields: ["b", "c"]`}},
		{name: "required made optional", old: `{type: object, required: [a, b], ` + ab + `}`, new: `{type: object, required: [a], ` + ab + `}`, want: []string{}},
		{name: "required reordered", old: `{type: object, required: [a, b], ` + ab + `}`, new: `{type: object, required: [b, a], ` + ab + `}`, want: []string{}},
		{name: "new optional parent with required children",
			old:  `{type: object, ` + ab + `}`,
			new:  `{type: object, properties: {a: {type: string}, b: {type: string}, p: {type: object, required: [q], properties: {q: {type: string}}}}}`,
			want: []string{}},
		{name: "existing parent gets a required child", old: `{type: object, properties: {p: {type: object}}}`,
			new:  `{type: object, properties: {p: {type: object, required: [q], properties: {q: {type: string}}}}}`,
			want: []string{`error required v1 ^.spec.x.p: new required fields: ["q"]`}},
		{name: "under array items", old: `{type: array, items: {type: object, ` + ab + `}}`, new: `{type: array, items: {type: object, required: [b], ` + ab + `}}`,
			want: []string{`error required v1 ^.spec.x[*]: new required fields: ["b"]`}},
		{name: "made required with the same default before and after: no stored object or writer can lack it",
			old:  `{type: object, properties: {a: {type: string, default: x}, b: {type: string}}}`,
			new:  `{type: object, required: [a], properties: {a: {type: string, default: x}, b: {type: string}}}`,
			want: []string{}},
		{name: "made required with a default changed: the default check reports the change, required stays",
			old:  `{type: object, properties: {a: {type: string, default: x}, b: {type: string}}}`,
			new:  `{type: object, required: [a], properties: {a: {type: string, default: z}, b: {type: string}}}`,
			want: []string{`error required v1 ^.spec.x: new required fields: ["a"]`, `error default v1 ^.spec.x.a: default changed: "x" -> "z"`}},
		{name: "made required with a default added",
			old:  `{type: object, properties: {a: {type: string}, b: {type: string}}}`,
			new:  `{type: object, required: [a], properties: {a: {type: string, default: x}, b: {type: string}}}`,
			want: []string{`error required v1 ^.spec.x: new required fields: ["a"]`, `error default v1 ^.spec.x.a: default added: (none) -> "x"`}},
		{name: "newEnforcement None", old: `{type: object, ` + ab + `}`, new: `{type: object, required: [a], ` + ab + `}`,
			config: func(c *config.Settings) {
				c.Checks.SameVersion.Required.NewEnforcement = config.EnforcementNone
			},
			want: []string{}},
		{name: "disabled", old: `{type: object, ` + ab + `}`, new: `{type: object, required: [a], ` + ab + `}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Required.Enabled = false },
			want:   []string{}},
	})
}

// TestRequiredWithSameDefaultAgreesWithAPIServer: a field made required
// that has the same default before and after is no finding, because the
// apiserver defaults before it validates: an object lacking the field, or
// holding null there, read or written under the new CRD passes the
// apiserver's own validation (the reader runs its pruning, defaulting and
// custom resource strategy).
func TestRequiredWithSameDefaultAgreesWithAPIServer(t *testing.T) {
	oldCRD := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {size: {type: string, default: M}}}`})
	withDefault := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, required: [size], properties: {size: {type: string, default: M}}}`})
	assert.Empty(t, Compare(oldCRD, withDefault, nil))

	r, err := NewObjectReader(oldCRD, withDefault, "v1", finding.SourceSamples, nil, nil)
	require.NoError(t, err)
	r.Read([]map[string]any{
		enginetest.Widget("v1", "ns", "absent", map[string]any{}),
		enginetest.Widget("v1", "ns", "null", map[string]any{"size": nil}),
		enginetest.Widget("v1", "ns", "set", map[string]any{"size": "L"}),
	})
	res := r.Result()
	assert.Equal(t, 3, res.Objects())
	assert.Zero(t, res.Affected, "objects affected")
	assert.Empty(t, res.Residual)

	// Without the default, the same objects are refused: the test can fail.
	noDefault := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, required: [size], properties: {size: {type: string}}}`})
	r, err = NewObjectReader(oldCRD, noDefault, "v1", finding.SourceSamples, nil, nil)
	require.NoError(t, err)
	r.Read([]map[string]any{enginetest.Widget("v1", "ns", "absent", map[string]any{})})
	assert.Equal(t, 1, r.Result().Affected)
}

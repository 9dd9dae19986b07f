package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
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

package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestType(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: string}`, new: `{type: string}`, want: []string{}},
		{name: "string -> integer", old: `{type: string}`, new: `{type: integer}`,
			want: []string{`error type v1 ^.spec.x: type changed: "string" -> "integer"`}},
		{name: "integer -> number", old: `{type: integer}`, new: `{type: number}`,
			want: []string{`error type v1 ^.spec.x: type changed: "integer" -> "number"`}},
		{name: "object -> array", old: `{type: object}`, new: `{type: array, items: {type: string}}`,
			want: []string{
				`error type v1 ^.spec.x: type changed: "object" -> "array"`,
				`error unhandled v1 ^.spec.x: unable to determine if the change to items is safe: (none) -> {"type":"string"}`,
			}},
		{name: "boolean -> string", old: `{type: boolean}`, new: `{type: string}`,
			want: []string{`error type v1 ^.spec.x: type changed: "boolean" -> "string"`}},
		{name: "type set on an untyped value", old: `{x-kubernetes-preserve-unknown-fields: true}`, new: `{type: object, x-kubernetes-preserve-unknown-fields: true}`,
			want: []string{`error type v1 ^.spec.x: type changed: (none) -> "object"`}},
		{name: "type dropped to an untyped value relaxes", old: `{type: object}`, new: `{x-kubernetes-preserve-unknown-fields: true}`,
			want: []string{}},
		{name: "object -> int-or-string", old: `{type: object}`, new: `{x-kubernetes-int-or-string: true}`,
			want: []string{`error type v1 ^.spec.x: type changed: "object" -> int-or-string`}},
		{name: "boolean -> int-or-string (controller-gen form)", old: `{type: boolean}`, new: `{x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}`,
			want: []string{`error type v1 ^.spec.x: type changed: "boolean" -> int-or-string`}},
		{name: "nested property", old: `{type: object, properties: {a: {type: object, properties: {b: {type: string}}}}}`,
			new:  `{type: object, properties: {a: {type: object, properties: {b: {type: boolean}}}}}`,
			want: []string{`error type v1 ^.spec.x.a.b: type changed: "string" -> "boolean"`}},
		{name: "array items", old: `{type: array, items: {type: string}}`, new: `{type: array, items: {type: integer}}`,
			want: []string{`error type v1 ^.spec.x[*]: type changed: "string" -> "integer"`}},
		{name: "changeEnforcement None", old: `{type: string}`, new: `{type: integer}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Type.ChangeEnforcement = config.EnforcementNone },
			want:   []string{}},
		{name: "changeEnforcement None covers a change to int-or-string", old: `{type: object}`, new: `{x-kubernetes-int-or-string: true}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Type.ChangeEnforcement = config.EnforcementNone },
			want:   []string{}},
		{name: "disabled", old: `{type: string}`, new: `{type: integer}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Type.Enabled = false },
			want:   []string{}},
		{name: "disabled covers a change to int-or-string", old: `{type: object}`, new: `{x-kubernetes-int-or-string: true}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Type.Enabled = false },
			want:   []string{}},
		{name: "servedVersion type options do not apply to sameVersion", old: `{type: string}`, new: `{type: integer}`,
			config: func(c *config.Settings) { c.Checks.ServedVersion.Type.Enabled = false },
			want:   []string{`error type v1 ^.spec.x: type changed: "string" -> "integer"`}},
	})
}

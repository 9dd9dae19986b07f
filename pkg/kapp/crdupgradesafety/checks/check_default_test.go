package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestDefault(t *testing.T) {
	def := func(f func(*config.DefaultCheck)) func(*config.Settings) {
		return func(c *config.Settings) { f(&c.Checks.SameVersion.Default) }
	}
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: string, default: a}`, new: `{type: string, default: a}`, want: []string{}},
		{name: "object default with keys reordered", old: `{type: object, default: {a: 1, b: [1, 2]}}`, new: `{type: object, default: {b: [1, 2], a: 1}}`,
			want: []string{}},
		{name: "added", old: `{type: string}`, new: `{type: string, default: a}`,
			want: []string{`error default v1 ^.spec.x: default added: (none) -> "a"`}},
		{name: "changed", old: `{type: string, default: a}`, new: `{type: string, default: b}`,
			want: []string{`error default v1 ^.spec.x: default changed: "a" -> "b"`}},
		{name: "removed", old: `{type: integer, default: 3}`, new: `{type: integer}`,
			want: []string{`error default v1 ^.spec.x: default removed: 3 -> (none)`}},
		{name: "object default changed", old: `{type: object, default: {a: 1}}`, new: `{type: object, default: {a: 2}}`,
			want: []string{`error default v1 ^.spec.x: default changed: {"a":1} -> {"a":2}`}},
		{name: "false default added", old: `{type: boolean}`, new: `{type: boolean, default: false}`,
			want: []string{`error default v1 ^.spec.x: default added: (none) -> false`}},
		{name: "nested", old: `{type: object, properties: {a: {type: string, default: on}}}`, new: `{type: object, properties: {a: {type: string, default: "off"}}}`,
			want: []string{`error default v1 ^.spec.x.a: default changed: true -> "off"`}},

		{name: "additionEnforcement None", old: `{type: string}`, new: `{type: string, default: a}`,
			config: def(func(d *config.DefaultCheck) { d.AdditionEnforcement = config.EnforcementNone }),
			want:   []string{}},
		{name: "additionEnforcement None leaves change on", old: `{type: string, default: a}`, new: `{type: string, default: b}`,
			config: def(func(d *config.DefaultCheck) { d.AdditionEnforcement = config.EnforcementNone }),
			want:   []string{`error default v1 ^.spec.x: default changed: "a" -> "b"`}},
		{name: "changeEnforcement None", old: `{type: string, default: a}`, new: `{type: string, default: b}`,
			config: def(func(d *config.DefaultCheck) { d.ChangeEnforcement = config.EnforcementNone }),
			want:   []string{}},
		{name: "changeEnforcement None leaves removal on", old: `{type: string, default: a}`, new: `{type: string}`,
			config: def(func(d *config.DefaultCheck) { d.ChangeEnforcement = config.EnforcementNone }),
			want:   []string{`error default v1 ^.spec.x: default removed: "a" -> (none)`}},
		{name: "removalEnforcement None", old: `{type: string, default: a}`, new: `{type: string}`,
			config: def(func(d *config.DefaultCheck) { d.RemovalEnforcement = config.EnforcementNone }),
			want:   []string{}},
		{name: "removalEnforcement None leaves addition on", old: `{type: string}`, new: `{type: string, default: a}`,
			config: def(func(d *config.DefaultCheck) { d.RemovalEnforcement = config.EnforcementNone }),
			want:   []string{`error default v1 ^.spec.x: default added: (none) -> "a"`}},
		{name: "disabled", old: `{type: string, default: a}`, new: `{type: string, default: b}`,
			config: def(func(d *config.DefaultCheck) { d.Enabled = false }),
			want:   []string{}},
	})
}

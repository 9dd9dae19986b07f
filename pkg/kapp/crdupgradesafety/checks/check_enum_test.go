package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestEnum(t *testing.T) {
	enum := func(f func(*config.EnumCheck)) func(*config.Settings) {
		return func(c *config.Settings) { f(&c.Checks.SameVersion.Enum) }
	}
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: string, enum: [a, b]}`, new: `{type: string, enum: [a, b]}`, want: []string{}},
		{name: "enum added where none was", old: `{type: string}`, new: `{type: string, enum: [a, b]}`,
			want: []string{`error enum v1 ^.spec.x: enum constraint added: ["a", "b"]`}},
		{name: "value removed", old: `{type: string, enum: [a, b, c]}`, new: `{type: string, enum: [a, c]}`,
			want: []string{`error enum v1 ^.spec.x: enum values removed: ["b"]`}},
		{name: "values added to an existing enum", old: `{type: string, enum: [a]}`, new: `{type: string, enum: [a, b, c]}`, want: []string{}},
		{name: "values reordered", old: `{type: string, enum: [a, b, c]}`, new: `{type: string, enum: [c, a, b]}`, want: []string{}},
		{name: "whole enum dropped relaxes", old: `{type: string, enum: [a, b]}`, new: `{type: string}`, want: []string{}},
		{name: "value replaced: only the removal is reported by default", old: `{type: string, enum: [a, b]}`, new: `{type: string, enum: [a, c]}`,
			want: []string{`error enum v1 ^.spec.x: enum values removed: ["b"]`}},
		{name: "integer values", old: `{type: integer, enum: [1, 2, 3]}`, new: `{type: integer, enum: [3, 1]}`,
			want: []string{`error enum v1 ^.spec.x: enum values removed: [2]`}},
		{name: "nested under items", old: `{type: array, items: {type: string, enum: [a, b]}}`, new: `{type: array, items: {type: string, enum: [b]}}`,
			want: []string{`error enum v1 ^.spec.x[*]: enum values removed: ["a"]`}},

		{name: "additionEnforcement Strict: values added", old: `{type: string, enum: [a]}`, new: `{type: string, enum: [a, b, c]}`,
			config: enum(func(e *config.EnumCheck) { e.AdditionEnforcement = config.EnforcementStrict }),
			want:   []string{`error enum v1 ^.spec.x: enum values added: ["b", "c"]`}},
		{name: "additionEnforcement Strict: enum added", old: `{type: string}`, new: `{type: string, enum: [a]}`,
			config: enum(func(e *config.EnumCheck) { e.AdditionEnforcement = config.EnforcementStrict }),
			want:   []string{`error enum v1 ^.spec.x: enum constraint added: ["a"]`}},
		{name: "additionEnforcement Strict: value replaced", old: `{type: string, enum: [a, b]}`, new: `{type: string, enum: [a, c]}`,
			config: enum(func(e *config.EnumCheck) { e.AdditionEnforcement = config.EnforcementStrict }),
			want:   []string{`error enum v1 ^.spec.x: enum values added: ["c"]`, `error enum v1 ^.spec.x: enum values removed: ["b"]`}},
		{name: "additionEnforcement IfPreviouslyConstrained: enum added", old: `{type: string}`, new: `{type: string, enum: [a]}`,
			config: enum(func(e *config.EnumCheck) { e.AdditionEnforcement = config.EnforcementIfPreviouslyConstrained }),
			want:   []string{`error enum v1 ^.spec.x: enum constraint added: ["a"]`}},
		{name: "additionEnforcement IfPreviouslyConstrained: values added", old: `{type: string, enum: [a]}`, new: `{type: string, enum: [a, b]}`,
			config: enum(func(e *config.EnumCheck) { e.AdditionEnforcement = config.EnforcementIfPreviouslyConstrained }),
			want:   []string{}},
		{name: "additionEnforcement None: enum added", old: `{type: string}`, new: `{type: string, enum: [a]}`,
			config: enum(func(e *config.EnumCheck) { e.AdditionEnforcement = config.EnforcementNone }),
			want:   []string{}},
		{name: "additionEnforcement None: removal still reported", old: `{type: string, enum: [a, b]}`, new: `{type: string, enum: [a]}`,
			config: enum(func(e *config.EnumCheck) { e.AdditionEnforcement = config.EnforcementNone }),
			want:   []string{`error enum v1 ^.spec.x: enum values removed: ["b"]`}},
		{name: "removalEnforcement Strict", old: `{type: string, enum: [a, b]}`, new: `{type: string, enum: [a]}`,
			config: enum(func(e *config.EnumCheck) { e.RemovalEnforcement = config.EnforcementStrict }),
			want:   []string{`error enum v1 ^.spec.x: enum values removed: ["b"]`}},
		{name: "removalEnforcement None", old: `{type: string, enum: [a, b]}`, new: `{type: string, enum: [a]}`,
			config: enum(func(e *config.EnumCheck) { e.RemovalEnforcement = config.EnforcementNone }),
			want:   []string{}},
		{name: "disabled", old: `{type: string}`, new: `{type: string, enum: [a]}`,
			config: enum(func(e *config.EnumCheck) { e.Enabled = false }),
			want:   []string{}},
	})
}

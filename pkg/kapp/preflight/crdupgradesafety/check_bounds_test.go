package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestBounds(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "minimum increased", old: `{type: integer, minimum: 1}`, new: `{type: integer, minimum: 5}`,
			want: []string{"error minimum v1 ^.spec.x: minimum increased: 1 -> 5"}},
		{name: "minimum decreased relaxes", old: `{type: integer, minimum: 5}`, new: `{type: integer, minimum: 1}`, want: []string{}},
		{name: "minimum added", old: `{type: integer}`, new: `{type: integer, minimum: 0}`,
			want: []string{"error minimum v1 ^.spec.x: minimum added: (none) -> 0"}},
		{name: "minimum removed relaxes", old: `{type: integer, minimum: 3}`, new: `{type: integer}`, want: []string{}},
		{name: "maxLength decreased", old: `{type: string, maxLength: 10}`, new: `{type: string, maxLength: 5}`,
			want: []string{"error maxLength v1 ^.spec.x: maxLength decreased: 10 -> 5"}},
		{name: "maxLength increased relaxes", old: `{type: string, maxLength: 5}`, new: `{type: string, maxLength: 10}`, want: []string{}},
		{name: "maxItems added", old: `{type: array, items: {type: string}}`, new: `{type: array, maxItems: 3, items: {type: string}}`,
			want: []string{"error maxItems v1 ^.spec.x: maxItems added: (none) -> 3"}},
		{name: "minItems increased", old: `{type: array, minItems: 1, items: {type: string}}`, new: `{type: array, minItems: 2, items: {type: string}}`,
			want: []string{"error minItems v1 ^.spec.x: minItems increased: 1 -> 2"}},
		{name: "minProperties and maxProperties", old: `{type: object, additionalProperties: {type: string}}`,
			new:  `{type: object, minProperties: 1, maxProperties: 9, additionalProperties: {type: string}}`,
			want: []string{"error maxProperties v1 ^.spec.x: maxProperties added: (none) -> 9", "error minProperties v1 ^.spec.x: minProperties added: (none) -> 1"}},
		{name: "minLength decreased relaxes", old: `{type: string, minLength: 3}`, new: `{type: string, minLength: 1}`, want: []string{}},
		{name: "fractional maximum decreased", old: `{type: number, maximum: 1.5}`, new: `{type: number, maximum: 1.25}`,
			want: []string{"error maximum v1 ^.spec.x: maximum decreased: 1.5 -> 1.25"}},
		{name: "addition enforcement None", old: `{type: integer}`, new: `{type: integer, minimum: 0}`,
			config: func(c *config.CRDUpgradeSafety) {
				c.Checks.SameVersion.Minimum.AdditionEnforcement = config.EnforcementNone
			},
			want: []string{}},
		{name: "increase enforcement None", old: `{type: integer, minimum: 1}`, new: `{type: integer, minimum: 5}`,
			config: func(c *config.CRDUpgradeSafety) {
				c.Checks.SameVersion.Minimum.IncreaseEnforcement = config.EnforcementNone
			},
			want: []string{}},
		{name: "decrease enforcement None", old: `{type: string, maxLength: 10}`, new: `{type: string, maxLength: 5}`,
			config: func(c *config.CRDUpgradeSafety) {
				c.Checks.SameVersion.MaxLength.DecreaseEnforcement = config.EnforcementNone
			},
			want: []string{}},
		{name: "disabled", old: `{type: string, maxLength: 10}`, new: `{type: string, maxLength: 5}`,
			config: func(c *config.CRDUpgradeSafety) { c.Checks.SameVersion.MaxLength.Enabled = false },
			want:   []string{}},
		{name: "exclusiveMinimum set", old: `{type: integer, minimum: 1}`, new: `{type: integer, minimum: 1, exclusiveMinimum: true}`,
			want: []string{"error exclusiveMinimum v1 ^.spec.x: exclusiveMinimum set: the minimum itself is no longer allowed"}},
		{name: "exclusiveMaximum unset relaxes", old: `{type: integer, maximum: 1, exclusiveMaximum: true}`, new: `{type: integer, maximum: 1}`, want: []string{}},
		{name: "warn mode", old: `{type: integer, minimum: 1}`, new: `{type: integer, minimum: 5}`,
			config: func(c *config.CRDUpgradeSafety) { c.Mode = config.ModeWarn },
			want:   []string{"warning minimum v1 ^.spec.x: minimum increased: 1 -> 5"}},
	})
}

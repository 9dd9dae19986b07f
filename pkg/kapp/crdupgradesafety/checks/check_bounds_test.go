package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
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
			config: func(c *config.Settings) {
				c.Checks.SameVersion.Minimum.AdditionEnforcement = config.EnforcementNone
			},
			want: []string{}},
		{name: "increase enforcement None", old: `{type: integer, minimum: 1}`, new: `{type: integer, minimum: 5}`,
			config: func(c *config.Settings) {
				c.Checks.SameVersion.Minimum.IncreaseEnforcement = config.EnforcementNone
			},
			want: []string{}},
		{name: "decrease enforcement None", old: `{type: string, maxLength: 10}`, new: `{type: string, maxLength: 5}`,
			config: func(c *config.Settings) {
				c.Checks.SameVersion.MaxLength.DecreaseEnforcement = config.EnforcementNone
			},
			want: []string{}},
		{name: "disabled", old: `{type: string, maxLength: 10}`, new: `{type: string, maxLength: 5}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.MaxLength.Enabled = false },
			want:   []string{}},
		{name: "exclusiveMinimum set", old: `{type: integer, minimum: 1}`, new: `{type: integer, minimum: 1, exclusiveMinimum: true}`,
			want: []string{"error exclusiveMinimum v1 ^.spec.x: exclusiveMinimum set: the minimum itself is no longer allowed"}},
		{name: "exclusiveMaximum unset relaxes", old: `{type: integer, maximum: 1, exclusiveMaximum: true}`, new: `{type: integer, maximum: 1}`, want: []string{}},
		{name: "warn mode", old: `{type: integer, minimum: 1}`, new: `{type: integer, minimum: 5}`,
			config: func(c *config.Settings) { c.Mode = config.ModeWarn },
			want:   []string{"warning minimum v1 ^.spec.x: minimum increased: 1 -> 5"}},
	})
}

// TestBoundsEveryKeyword runs the OLM rules for each of the eight min/max
// keywords (added, tightened, loosened, removed) and proves that each of
// their options (enabled, additionEnforcement, increase/decreaseEnforcement)
// changes the outcome.
func TestBoundsEveryKeyword(t *testing.T) {
	type kw struct {
		id, base string // keyword and the schema it applies to
		lo, hi   string // two values, lo < hi
		min      bool   // a lower bound: tightening raises it
		minCheck func(*config.VersionChecks) *config.MinCheck
		maxCheck func(*config.VersionChecks) *config.MaxCheck
	}
	keywords := []kw{
		{id: "minimum", base: "type: number", lo: "1", hi: "2", min: true, minCheck: func(v *config.VersionChecks) *config.MinCheck { return &v.Minimum }},
		{id: "minLength", base: "type: string", lo: "1", hi: "2", min: true, minCheck: func(v *config.VersionChecks) *config.MinCheck { return &v.MinLength }},
		{id: "minItems", base: "type: array, items: {type: string}", lo: "1", hi: "2", min: true, minCheck: func(v *config.VersionChecks) *config.MinCheck { return &v.MinItems }},
		{id: "minProperties", base: "type: object, additionalProperties: {type: string}", lo: "1", hi: "2", min: true, minCheck: func(v *config.VersionChecks) *config.MinCheck { return &v.MinProperties }},
		{id: "maximum", base: "type: number", lo: "1", hi: "2", maxCheck: func(v *config.VersionChecks) *config.MaxCheck { return &v.Maximum }},
		{id: "maxLength", base: "type: string", lo: "1", hi: "2", maxCheck: func(v *config.VersionChecks) *config.MaxCheck { return &v.MaxLength }},
		{id: "maxItems", base: "type: array, items: {type: string}", lo: "1", hi: "2", maxCheck: func(v *config.VersionChecks) *config.MaxCheck { return &v.MaxItems }},
		{id: "maxProperties", base: "type: object, additionalProperties: {type: string}", lo: "1", hi: "2", maxCheck: func(v *config.VersionChecks) *config.MaxCheck { return &v.MaxProperties }},
	}
	var cases []schemaCase
	for _, k := range keywords {
		schema := func(v string) string {
			if v == "" {
				return "{" + k.base + "}"
			}
			return "{" + k.base + ", " + k.id + ": " + v + "}"
		}
		tight, loose, verb := k.hi, k.lo, "increased"
		if !k.min {
			tight, loose, verb = k.lo, k.hi, "decreased"
		}
		added := "error " + k.id + " v1 ^.spec.x: " + k.id + " added: (none) -> " + loose
		tightened := "error " + k.id + " v1 ^.spec.x: " + k.id + " " + verb + ": " + loose + " -> " + tight
		set := func(f func(enabled *bool, addition, tighten *config.Enforcement)) func(*config.Settings) {
			return func(c *config.Settings) {
				if k.min {
					m := k.minCheck(&c.Checks.SameVersion)
					f(&m.Enabled, &m.AdditionEnforcement, &m.IncreaseEnforcement)
				} else {
					m := k.maxCheck(&c.Checks.SameVersion)
					f(&m.Enabled, &m.AdditionEnforcement, &m.DecreaseEnforcement)
				}
			}
		}
		tightenOpt := "increaseEnforcement"
		if !k.min {
			tightenOpt = "decreaseEnforcement"
		}
		cases = append(cases,
			schemaCase{name: k.id + " added", old: schema(""), new: schema(loose), want: []string{added}},
			schemaCase{name: k.id + " " + verb, old: schema(loose), new: schema(tight), want: []string{tightened}},
			schemaCase{name: k.id + " loosened", old: schema(tight), new: schema(loose), want: []string{}},
			schemaCase{name: k.id + " removed", old: schema(loose), new: schema(""), want: []string{}},
			schemaCase{name: k.id + " unchanged", old: schema(loose), new: schema(loose), want: []string{}},
			schemaCase{name: k.id + " disabled: added", old: schema(""), new: schema(loose),
				config: set(func(e *bool, _, _ *config.Enforcement) { *e = false }), want: []string{}},
			schemaCase{name: k.id + " disabled: " + verb, old: schema(loose), new: schema(tight),
				config: set(func(e *bool, _, _ *config.Enforcement) { *e = false }), want: []string{}},
			schemaCase{name: k.id + " additionEnforcement None", old: schema(""), new: schema(loose),
				config: set(func(_ *bool, a, _ *config.Enforcement) { *a = config.EnforcementNone }), want: []string{}},
			schemaCase{name: k.id + " additionEnforcement None leaves " + tightenOpt + " on", old: schema(loose), new: schema(tight),
				config: set(func(_ *bool, a, _ *config.Enforcement) { *a = config.EnforcementNone }), want: []string{tightened}},
			schemaCase{name: k.id + " " + tightenOpt + " None", old: schema(loose), new: schema(tight),
				config: set(func(_ *bool, _, d *config.Enforcement) { *d = config.EnforcementNone }), want: []string{}},
			schemaCase{name: k.id + " " + tightenOpt + " None leaves additionEnforcement on", old: schema(""), new: schema(loose),
				config: set(func(_ *bool, _, d *config.Enforcement) { *d = config.EnforcementNone }), want: []string{added}},
			schemaCase{name: k.id + " servedVersion options do not apply to sameVersion", old: schema(loose), new: schema(tight),
				config: func(c *config.Settings) {
					c.Checks.ServedVersion.Enabled = false
					if k.min {
						k.minCheck(&c.Checks.ServedVersion.VersionChecks).Enabled = false
					} else {
						k.maxCheck(&c.Checks.ServedVersion.VersionChecks).Enabled = false
					}
				},
				want: []string{tightened}},
		)
	}
	runSchemaCases(t, cases)
}

func TestExclusiveBounds(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "exclusiveMinimum set", old: `{type: number, minimum: 0}`, new: `{type: number, minimum: 0, exclusiveMinimum: true}`,
			want: []string{"error exclusiveMinimum v1 ^.spec.x: exclusiveMinimum set: the minimum itself is no longer allowed"}},
		{name: "exclusiveMinimum unset relaxes", old: `{type: number, minimum: 0, exclusiveMinimum: true}`, new: `{type: number, minimum: 0}`, want: []string{}},
		{name: "exclusiveMinimum toggle off", old: `{type: number, minimum: 0}`, new: `{type: number, minimum: 0, exclusiveMinimum: true}`,
			config: enginetest.ToggleOff(config.CheckExclusiveMinimum), want: []string{}},
		{name: "exclusiveMaximum set", old: `{type: number, maximum: 9}`, new: `{type: number, maximum: 9, exclusiveMaximum: true}`,
			want: []string{"error exclusiveMaximum v1 ^.spec.x: exclusiveMaximum set: the maximum itself is no longer allowed"}},
		{name: "exclusiveMaximum added with a new maximum", old: `{type: number}`, new: `{type: number, maximum: 9, exclusiveMaximum: true}`,
			want: []string{
				"error exclusiveMaximum v1 ^.spec.x: exclusiveMaximum set: the maximum itself is no longer allowed",
				"error maximum v1 ^.spec.x: maximum added: (none) -> 9",
			}},
		{name: "exclusiveMaximum toggle off", old: `{type: number, maximum: 9}`, new: `{type: number, maximum: 9, exclusiveMaximum: true}`,
			config: enginetest.ToggleOff(config.CheckExclusiveMaximum), want: []string{}},
	})
}

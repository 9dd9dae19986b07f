package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestMapType(t *testing.T) {
	const granularToAtomic = "x-kubernetes-map-type changed: granular -> atomic: no stored object becomes invalid, only server-side apply ownership changes"
	mapType := func(e config.Enforcement) func(*config.Settings) {
		return func(c *config.Settings) { c.Checks.SameVersion.MapType.ChangeEnforcement = e }
	}
	runSchemaCases(t, []schemaCase{
		{name: "absent -> granular", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, x-kubernetes-map-type: granular, additionalProperties: {type: string}}`,
			want: []string{}},
		{name: "absent -> atomic", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}`,
			want: []string{"warning mapType v1 ^.spec.x: " + granularToAtomic}},
		{name: "atomic -> absent", old: `{type: object, x-kubernetes-map-type: atomic, properties: {a: {type: string}}}`, new: `{type: object, properties: {a: {type: string}}}`,
			want: []string{"warning mapType v1 ^.spec.x: x-kubernetes-map-type changed: atomic -> granular: no stored object becomes invalid, only server-side apply ownership changes"}},
		{name: "atomic unchanged", old: `{type: object, x-kubernetes-map-type: atomic}`, new: `{type: object, x-kubernetes-map-type: atomic}`,
			want: []string{}},
		{name: "controller-gen atomic reference struct", old: `{type: object, properties: {name: {type: string}}}`,
			new:  `{type: object, x-kubernetes-map-type: atomic, properties: {name: {type: string}}}`,
			want: []string{"warning mapType v1 ^.spec.x: " + granularToAtomic}},
		{name: "changeEnforcement Strict", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}`,
			config: mapType(config.EnforcementStrict), want: []string{"error mapType v1 ^.spec.x: " + granularToAtomic}},
		{name: "changeEnforcement Strict in mode warn", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}`,
			config: func(c *config.Settings) {
				mapType(config.EnforcementStrict)(c)
				c.Mode = config.ModeWarn
			},
			want: []string{"warning mapType v1 ^.spec.x: " + granularToAtomic}},
		{name: "changeEnforcement None", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}`,
			config: mapType(config.EnforcementNone), want: []string{}},
		{name: "mapType disabled", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.MapType.Enabled = false },
			want:   []string{}},
		{name: "mapType disabled leaves listType on", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.MapType.Enabled = false },
			want:   []string{"error listType v1 ^.spec.x: x-kubernetes-list-type changed: atomic -> set: stored lists with duplicate items become invalid"}},
	})
}

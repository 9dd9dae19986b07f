package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
)

func TestListType(t *testing.T) {
	const items = `items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}`
	const (
		atomicToSet = "x-kubernetes-list-type changed: atomic -> set: stored lists with duplicate items become invalid"
		setToAtomic = "x-kubernetes-list-type changed: set -> atomic: no stored list becomes invalid, only server-side apply ownership becomes coarser"
	)
	listType := func(f func(*config.ListTypeCheck)) func(*config.Settings) {
		return func(c *config.Settings) { f(&c.Checks.SameVersion.ListType) }
	}
	runSchemaCases(t, []schemaCase{
		{name: "absent -> atomic", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: atomic, items: {type: string}}`,
			want: []string{}},
		{name: "atomic -> absent", old: `{type: array, x-kubernetes-list-type: atomic, items: {type: string}}`, new: `{type: array, items: {type: string}}`,
			want: []string{}},

		// Uniqueness added: an error by default.
		{name: "absent -> set", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`,
			want: []string{"error listType v1 ^.spec.x: " + atomicToSet}},
		{name: "atomic -> map", old: `{type: array, ` + items + `}`, new: `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], ` + items + `}`,
			want: []string{"error listType v1 ^.spec.x: x-kubernetes-list-type changed: atomic -> map: stored lists with duplicate items become invalid"}},
		{name: "set -> map", old: `{type: array, x-kubernetes-list-type: set, items: {type: object, x-kubernetes-map-type: atomic, required: [name], properties: {name: {type: string}}}}`,
			new:  `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, x-kubernetes-map-type: atomic, required: [name], properties: {name: {type: string}}}}`,
			want: []string{"error listType v1 ^.spec.x: x-kubernetes-list-type changed: set -> map: stored lists with duplicate items become invalid"}},
		{name: "map keys changed", old: `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], ` + items + `}`,
			new:  `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name, port], ` + items + `}`,
			want: []string{"error listType v1 ^.spec.x: x-kubernetes-list-map-keys changed: [name] -> [name, port]: stored lists may hold items that are not unique by the new keys"}},
		{name: "map keys reordered", old: `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name, port], ` + items + `}`,
			new:  `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [port, name], ` + items + `}`,
			want: []string{}},
		{name: "nested list", old: `{type: object, properties: {l: {type: array, items: {type: string}}}}`,
			new:  `{type: object, properties: {l: {type: array, x-kubernetes-list-type: set, items: {type: string}}}}`,
			want: []string{"error listType v1 ^.spec.x.l: " + atomicToSet}},

		// Ownership coarsened only: a warning by default.
		{name: "set -> atomic", old: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: atomic, items: {type: string}}`,
			want: []string{"warning listType v1 ^.spec.x: " + setToAtomic}},
		{name: "set -> absent", old: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`, new: `{type: array, items: {type: string}}`,
			want: []string{"warning listType v1 ^.spec.x: " + setToAtomic}},
		{name: "map -> atomic", old: `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], ` + items + `}`, new: `{type: array, ` + items + `}`,
			want: []string{"warning listType v1 ^.spec.x: x-kubernetes-list-type changed: map -> atomic: no stored list becomes invalid, only server-side apply ownership becomes coarser"}},
		{name: "map -> set", old: `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, x-kubernetes-map-type: atomic, required: [name], properties: {name: {type: string}}}}`,
			new:  `{type: array, x-kubernetes-list-type: set, items: {type: object, x-kubernetes-map-type: atomic, required: [name], properties: {name: {type: string}}}}`,
			want: []string{"warning listType v1 ^.spec.x: x-kubernetes-list-type changed: map -> set: no stored list becomes invalid, only server-side apply ownership becomes coarser"}},
		{name: "coarsening is a warning in mode error", old: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`, new: `{type: array, items: {type: string}}`,
			config: func(c *config.Settings) { c.Mode = config.ModeError },
			want:   []string{"warning listType v1 ^.spec.x: " + setToAtomic}},

		// Each enforcement changes what is reported.
		{name: "coarseningEnforcement Strict", old: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`, new: `{type: array, items: {type: string}}`,
			config: listType(func(l *config.ListTypeCheck) { l.CoarseningEnforcement = config.EnforcementStrict }),
			want:   []string{"error listType v1 ^.spec.x: " + setToAtomic}},
		{name: "coarseningEnforcement None", old: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`, new: `{type: array, items: {type: string}}`,
			config: listType(func(l *config.ListTypeCheck) { l.CoarseningEnforcement = config.EnforcementNone }),
			want:   []string{}},
		{name: "coarseningEnforcement leaves uniqueness alone", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`,
			config: listType(func(l *config.ListTypeCheck) { l.CoarseningEnforcement = config.EnforcementNone }),
			want:   []string{"error listType v1 ^.spec.x: " + atomicToSet}},
		{name: "uniquenessEnforcement Warn", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`,
			config: listType(func(l *config.ListTypeCheck) { l.UniquenessEnforcement = config.EnforcementWarn }),
			want:   []string{"warning listType v1 ^.spec.x: " + atomicToSet}},
		{name: "uniquenessEnforcement None", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`,
			config: listType(func(l *config.ListTypeCheck) { l.UniquenessEnforcement = config.EnforcementNone }),
			want:   []string{}},
		{name: "uniquenessEnforcement covers map keys", old: `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], ` + items + `}`,
			new:    `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [port], ` + items + `}`,
			config: listType(func(l *config.ListTypeCheck) { l.UniquenessEnforcement = config.EnforcementNone }),
			want:   []string{}},
		{name: "listType disabled", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`,
			config: listType(func(l *config.ListTypeCheck) { l.Enabled = false }),
			want:   []string{}},
		{name: "exemption of a warning keeps it a warning", old: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`, new: `{type: array, items: {type: string}}`,
			config: func(c *config.Settings) {
				c.Waivers = []config.Waiver{{CRD: enginetest.TestCRDName, Reason: "ok"}}
			},
			want: []string{"warning listType v1 ^.spec.x: " + setToAtomic + " (exempted: ok)"}},
	})
}

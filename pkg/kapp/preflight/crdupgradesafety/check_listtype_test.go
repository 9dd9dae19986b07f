package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestListType(t *testing.T) {
	const items = `items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}`
	runSchemaCases(t, []schemaCase{
		{name: "absent -> atomic", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: atomic, items: {type: string}}`,
			want: []string{}},
		{name: "atomic -> absent", old: `{type: array, x-kubernetes-list-type: atomic, items: {type: string}}`, new: `{type: array, items: {type: string}}`,
			want: []string{}},
		{name: "absent -> set", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`,
			want: []string{"error listType v1 ^.spec.x: x-kubernetes-list-type changed: atomic -> set"}},
		{name: "set -> atomic", old: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: atomic, items: {type: string}}`,
			want: []string{"error listType v1 ^.spec.x: x-kubernetes-list-type changed: set -> atomic"}},
		{name: "set -> absent", old: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`, new: `{type: array, items: {type: string}}`,
			want: []string{"error listType v1 ^.spec.x: x-kubernetes-list-type changed: set -> atomic"}},
		{name: "atomic -> map", old: `{type: array, ` + items + `}`, new: `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], ` + items + `}`,
			want: []string{"error listType v1 ^.spec.x: x-kubernetes-list-type changed: atomic -> map"}},
		{name: "map keys changed", old: `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], ` + items + `}`,
			new:  `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name, port], ` + items + `}`,
			want: []string{"error listType v1 ^.spec.x: x-kubernetes-list-map-keys changed: [name] -> [name, port]"}},
		{name: "map keys reordered", old: `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name, port], ` + items + `}`,
			new:  `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [port, name], ` + items + `}`,
			want: []string{}},
		{name: "nested list", old: `{type: object, properties: {l: {type: array, items: {type: string}}}}`,
			new:  `{type: object, properties: {l: {type: array, x-kubernetes-list-type: set, items: {type: string}}}}`,
			want: []string{"error listType v1 ^.spec.x.l: x-kubernetes-list-type changed: atomic -> set"}},
		{name: "listType toggle off", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`,
			config: func(c *config.CRDUpgradeSafety) { c.Checks.SameVersion.Toggles[config.CheckListType] = false },
			want:   []string{}},
		{name: "listType toggle off covers map keys", old: `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], ` + items + `}`,
			new:    `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [port], ` + items + `}`,
			config: func(c *config.CRDUpgradeSafety) { c.Checks.SameVersion.Toggles[config.CheckListType] = false },
			want:   []string{}},
	})
}

func TestMapType(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "absent -> granular", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, x-kubernetes-map-type: granular, additionalProperties: {type: string}}`,
			want: []string{}},
		{name: "absent -> atomic", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}`,
			want: []string{"error mapType v1 ^.spec.x: x-kubernetes-map-type changed: granular -> atomic"}},
		{name: "atomic -> absent", old: `{type: object, x-kubernetes-map-type: atomic, properties: {a: {type: string}}}`, new: `{type: object, properties: {a: {type: string}}}`,
			want: []string{"error mapType v1 ^.spec.x: x-kubernetes-map-type changed: atomic -> granular"}},
		{name: "atomic unchanged", old: `{type: object, x-kubernetes-map-type: atomic}`, new: `{type: object, x-kubernetes-map-type: atomic}`,
			want: []string{}},
		{name: "mapType toggle off", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}`,
			config: func(c *config.CRDUpgradeSafety) { c.Checks.SameVersion.Toggles[config.CheckMapType] = false },
			want:   []string{}},
		{name: "mapType toggle off leaves listType on", old: `{type: array, items: {type: string}}`, new: `{type: array, x-kubernetes-list-type: set, items: {type: string}}`,
			config: func(c *config.CRDUpgradeSafety) { c.Checks.SameVersion.Toggles[config.CheckMapType] = false },
			want:   []string{"error listType v1 ^.spec.x: x-kubernetes-list-type changed: atomic -> set"}},
	})
}

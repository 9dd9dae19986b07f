package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
)

func TestEmbeddedResource(t *testing.T) {
	const (
		open     = `{type: object, x-kubernetes-preserve-unknown-fields: true}`
		embedded = `{type: object, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-embedded-resource: true}`
		added    = "error embeddedResource v1 ^.spec.x: x-kubernetes-embedded-resource added: stored objects without apiVersion or kind, or with invalid metadata, become invalid"
		removed  = "error embeddedResource v1 ^.spec.x: x-kubernetes-embedded-resource removed: apiVersion, kind and metadata of stored objects are no longer kept as they are (pruned, or held to the declared schemas)"
	)
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: embedded, new: embedded, want: []string{}},
		{name: "added", old: open, new: embedded, want: []string{added}},
		{name: "added with declared properties", old: `{type: object, properties: {spec: {type: object}}}`,
			new: `{type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object}}}`, want: []string{added}},
		{name: "added under items", old: `{type: array, items: ` + open + `}`, new: `{type: array, items: ` + embedded + `}`,
			want: []string{"error embeddedResource v1 ^.spec.x[*]: x-kubernetes-embedded-resource added: stored objects without apiVersion or kind, or with invalid metadata, become invalid"}},
		{name: "removed where unknown fields are kept", old: embedded, new: open, want: []string{}},
		{name: "removed where unknown fields are pruned", old: `{type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object}}}`,
			new: `{type: object, properties: {spec: {type: object}}}`, want: []string{removed}},
		{name: "removed, unknown fields kept, but metadata declared", old: embedded,
			new: `{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {metadata: {type: object}}}`, want: []string{removed}},
		{name: "embedded metadata constrained", old: embedded,
			new:  `{type: object, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-embedded-resource: true, properties: {metadata: {type: object, properties: {name: {type: string, maxLength: 5}}}}}`,
			want: []string{"error maxLength v1 ^.spec.x.metadata.name: maxLength added: (none) -> 5 (declared where stored objects may already hold data: every object has metadata)"}},
		{name: "embeddedResource toggle off", old: open, new: embedded, config: enginetest.ToggleOff(config.CheckEmbeddedResource), want: []string{}},
		{name: "embeddedResource toggle off: removed", old: `{type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object}}}`,
			new: `{type: object, properties: {spec: {type: object}}}`, config: enginetest.ToggleOff(config.CheckEmbeddedResource), want: []string{}},
		{name: "failMode open does not hide it", old: open, new: embedded,
			config: func(c *config.Settings) { c.FailMode = config.FailModeOpen }, want: []string{added}},
	})
}

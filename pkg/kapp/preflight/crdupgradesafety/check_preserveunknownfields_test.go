package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestPreserveUnknownFields(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, new: `{type: object, x-kubernetes-preserve-unknown-fields: true}`,
			want: []string{}},
		{name: "removed", old: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, new: `{type: object}`,
			want: []string{"error preserveUnknownFields v1 ^.spec.x: x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned"}},
		{name: "set to false", old: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, new: `{type: object, x-kubernetes-preserve-unknown-fields: false}`,
			want: []string{"error preserveUnknownFields v1 ^.spec.x: x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned"}},
		{name: "added relaxes", old: `{type: object}`, new: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, want: []string{}},
		{name: "false -> absent", old: `{type: object, x-kubernetes-preserve-unknown-fields: false}`, new: `{type: object}`, want: []string{}},
		{name: "removed from items", old: `{type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}`, new: `{type: array, items: {type: object}}`,
			want: []string{"error preserveUnknownFields v1 ^.spec.x[*]: x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned"}},
		{name: "preserveUnknownFields toggle off", old: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, new: `{type: object}`,
			config: func(c *config.CRDUpgradeSafety) {
				c.Checks.SameVersion.Toggles[config.CheckPreserveUnknownFields] = false
			},
			want: []string{}},
	})
}

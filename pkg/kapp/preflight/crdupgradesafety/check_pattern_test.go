package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestPattern(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: string, pattern: "^a+$"}`, new: `{type: string, pattern: "^a+$"}`, want: []string{}},
		{name: "added", old: `{type: string}`, new: `{type: string, pattern: "^[a-z]+$"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern added: (none) -> "^[a-z]+$"`}},
		{name: "changed", old: `{type: string, pattern: "^[a-z]+$"}`, new: `{type: string, pattern: "^[a-z0-9]+$"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern changed: "^[a-z]+$" -> "^[a-z0-9]+$"`}},
		{name: "removed relaxes", old: `{type: string, pattern: "^[a-z]+$"}`, new: `{type: string}`, want: []string{}},
		{name: "under map values", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, additionalProperties: {type: string, pattern: "^v"}}`,
			want: []string{`error pattern v1 ^.spec.x{*}: pattern added: (none) -> "^v"`}},
		{name: "pattern toggle off", old: `{type: string}`, new: `{type: string, pattern: "^[a-z]+$"}`,
			config: func(c *config.CRDUpgradeSafety) { c.Checks.SameVersion.Toggles[config.CheckPattern] = false },
			want:   []string{}},
		{name: "pattern toggle off leaves format on", old: `{type: string}`, new: `{type: string, pattern: "^a", format: uri}`,
			config: func(c *config.CRDUpgradeSafety) { c.Checks.SameVersion.Toggles[config.CheckPattern] = false },
			want:   []string{`error format v1 ^.spec.x: format added: (none) -> "uri"`}},
	})
}

func TestFormat(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: string, format: date-time}`, new: `{type: string, format: date-time}`, want: []string{}},
		{name: "added", old: `{type: string}`, new: `{type: string, format: date-time}`,
			want: []string{`error format v1 ^.spec.x: format added: (none) -> "date-time"`}},
		{name: "changed", old: `{type: string, format: hostname}`, new: `{type: string, format: ipv4}`,
			want: []string{`error format v1 ^.spec.x: format changed: "hostname" -> "ipv4"`}},
		{name: "removed relaxes", old: `{type: string, format: uuid}`, new: `{type: string}`, want: []string{}},
		{name: "format toggle off", old: `{type: string}`, new: `{type: string, format: date-time}`,
			config: func(c *config.CRDUpgradeSafety) { c.Checks.SameVersion.Toggles[config.CheckFormat] = false },
			want:   []string{}},
	})
}

package checks

import (
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestUnhandled(t *testing.T) {
	// items on a string: structurally valid, and no check understands it.
	const withItems = `{type: string, items: {type: string}}`
	const plain = `{type: string}`
	failMode := func(m config.FailMode) func(*config.Settings) {
		return func(c *config.Settings) { c.FailMode = m }
	}
	long := strings.Repeat("a", 150)
	runSchemaCases(t, []schemaCase{
		{name: "items set on a string", old: plain, new: withItems,
			want: []string{`error unhandled v1 ^.spec.x: unable to determine if the change to items is safe: (none) -> {"type":"string"}`}},
		{name: "items unset on a string", old: withItems, new: plain,
			want: []string{`error unhandled v1 ^.spec.x: unable to determine if the change to items is safe: {"type":"string"} -> (none)`}},
		{name: "patternProperties added", old: `{type: object}`, new: `{type: object, patternProperties: {"^a": {type: string}}}`,
			want: []string{`error unhandled v1 ^.spec.x: unable to determine if the change to patternProperties is safe: (none) -> {"^a":{"type":"string"}}`}},
		{name: "patternProperties changed", old: `{type: object, patternProperties: {"^a": {type: string}}}`, new: `{type: object, patternProperties: {"^a": {type: integer}}}`,
			want: []string{`error unhandled v1 ^.spec.x: unable to determine if the change to patternProperties is safe: {"^a":{"type":"string"}} -> {"^a":{"type":"integer"}}`}},
		{name: "items added", old: `{type: array}`, new: `{type: array, items: {type: string}}`,
			want: []string{`error unhandled v1 ^.spec.x: unable to determine if the change to items is safe: (none) -> {"type":"string"}`}},
		{name: "$ref changed", old: `{$ref: "#/definitions/a"}`, new: `{$ref: "#/definitions/b"}`,
			want: []string{`error unhandled v1 ^.spec.x: unable to determine if the change to $ref is safe: "#/definitions/a" -> "#/definitions/b"`}},
		{name: "several keywords, one finding each", old: `{type: object}`, new: `{type: object, id: w, additionalItems: false, patternProperties: {"^a": {type: string}}}`,
			want: []string{
				`error unhandled v1 ^.spec.x: unable to determine if the change to additionalItems is safe: (none) -> false`,
				`error unhandled v1 ^.spec.x: unable to determine if the change to id is safe: (none) -> "w"`,
				`error unhandled v1 ^.spec.x: unable to determine if the change to patternProperties is safe: (none) -> {"^a":{"type":"string"}}`,
			}},
		{name: "long values are cut", old: `{type: object}`, new: `{type: object, patternProperties: {"^a": {type: string, description: ` + long + `}}}`,
			want: []string{`error unhandled v1 ^.spec.x: unable to determine if the change to patternProperties is safe: (none) -> {"^a":{"description":"` + long[:120-len(`{"^a":{"description":"`)] + `...`}},
		{name: "nested under items", old: `{type: array, items: ` + plain + `}`, new: `{type: array, items: ` + withItems + `}`,
			want: []string{`error unhandled v1 ^.spec.x[*]: unable to determine if the change to items is safe: (none) -> {"type":"string"}`}},
		{name: "unhandled change beside a handled one", old: `{type: object, maxProperties: 5}`, new: `{type: object, maxProperties: 4, patternProperties: {"^a": {type: string}}}`,
			want: []string{
				"error maxProperties v1 ^.spec.x: maxProperties decreased: 5 -> 4",
				`error unhandled v1 ^.spec.x: unable to determine if the change to patternProperties is safe: (none) -> {"^a":{"type":"string"}}`,
			}},

		{name: "failMode closed", old: plain, new: withItems, config: failMode(config.FailModeClosed),
			want: []string{`error unhandled v1 ^.spec.x: unable to determine if the change to items is safe: (none) -> {"type":"string"}`}},
		{name: "failMode open", old: plain, new: withItems, config: failMode(config.FailModeOpen), want: []string{}},
		{name: "failMode open leaves handled checks on", old: `{type: object, maxProperties: 5}`, new: `{type: object, maxProperties: 4, patternProperties: {"^a": {type: string}}}`,
			config: failMode(config.FailModeOpen),
			want:   []string{"error maxProperties v1 ^.spec.x: maxProperties decreased: 5 -> 4"}},
		{name: "sameVersion unhandledFailureMode Open overrides failMode closed", old: plain, new: withItems,
			config: func(c *config.Settings) {
				c.FailMode = config.FailModeClosed
				c.Checks.SameVersion.UnhandledFailureMode = config.FailModeOpen
			},
			want: []string{}},
		{name: "sameVersion unhandledFailureMode Closed overrides failMode open", old: plain, new: withItems,
			config: func(c *config.Settings) {
				c.FailMode = config.FailModeOpen
				c.Checks.SameVersion.UnhandledFailureMode = config.FailModeClosed
			},
			want: []string{`error unhandled v1 ^.spec.x: unable to determine if the change to items is safe: (none) -> {"type":"string"}`}},
		{name: "servedVersion unhandledFailureMode does not apply to sameVersion", old: plain, new: withItems,
			config: func(c *config.Settings) { c.Checks.ServedVersion.UnhandledFailureMode = config.FailModeOpen },
			want:   []string{`error unhandled v1 ^.spec.x: unable to determine if the change to items is safe: (none) -> {"type":"string"}`}},
		{name: "warn mode", old: plain, new: withItems, config: func(c *config.Settings) { c.Mode = config.ModeWarn },
			want: []string{`warning unhandled v1 ^.spec.x: unable to determine if the change to items is safe: (none) -> {"type":"string"}`}},
	})
}

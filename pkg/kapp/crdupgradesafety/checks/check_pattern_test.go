package checks

import (
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestPattern(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: string, pattern: "^a+$"}`, new: `{type: string, pattern: "^a+$"}`, want: []string{}},
		{name: "added", old: `{type: string}`, new: `{type: string, pattern: "^[a-z]+$"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern added: (none) -> "^[a-z]+$": "" no longer accepted`}},
		{name: "added, accepting every string", old: `{type: string}`, new: `{type: string, pattern: ".*"}`, want: []string{}},
		{name: "added unanchored", old: `{type: string}`, new: `{type: string, pattern: "[0-9]"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern added: (none) -> "[0-9]": "" no longer accepted`}},
		{name: "narrowed", old: `{type: string, pattern: "^[a-z0-9]+$"}`, new: `{type: string, pattern: "^[a-z]+$"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern changed: "^[a-z0-9]+$" -> "^[a-z]+$": "0" no longer accepted`}},
		{name: "length bounded", old: `{type: string, pattern: "^[a-z]+$"}`, new: `{type: string, pattern: "^[a-z]{1,8}$"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern changed: "^[a-z]+$" -> "^[a-z]{1,8}$": "aaaaaaaaa" no longer accepted`}},
		{name: "widened is safe", old: `{type: string, pattern: "^[a-z]+$"}`, new: `{type: string, pattern: "^[a-z0-9]+$"}`, want: []string{}},
		{name: "rewritten, same language", old: `{type: string, pattern: "^[0-9]{2}$"}`, new: `{type: string, pattern: "^\\d\\d$"}`, want: []string{}},
		{name: "anchor dropped is safe", old: `{type: string, pattern: "^v[0-9]+$"}`, new: `{type: string, pattern: "v[0-9]+"}`, want: []string{}},
		{name: "anchor added", old: `{type: string, pattern: "v[0-9]"}`, new: `{type: string, pattern: "^v[0-9]"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern changed: "v[0-9]" -> "^v[0-9]": "av0" no longer accepted`}},
		{name: "long witness shortened", old: `{type: string, pattern: "^a{0,200}$"}`, new: `{type: string, pattern: "^a{0,100}$"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern changed: "^a{0,200}$" -> "^a{0,100}$": "` + strings.Repeat("a", 40) + `"... (101 characters) no longer accepted`}},
		{name: "bound reached", old: `{type: string, pattern: "^[ab]*a[ab]{20}$"}`, new: `{type: string, pattern: "^[ab]*a[ab]{20}$|^[ab]*b[ab]{20}$"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern changed: "^[ab]*a[ab]{20}$" -> "^[ab]*a[ab]{20}$|^[ab]*b[ab]{20}$" (not proven safe: the comparison stopped at its bound of 20000 states)`}},
		{name: "invalid new pattern", old: `{type: string, pattern: "^a$"}`, new: `{type: string, pattern: "^(a$"}`,
			want: []string{"error pattern v1 ^.spec.x: pattern changed: \"^a$\" -> \"^(a$\" (not proven safe: parsing pattern \"^(a$\": error parsing regexp: missing closing ): `^(a$`)"}},
		{name: "removed relaxes", old: `{type: string, pattern: "^[a-z]+$"}`, new: `{type: string}`, want: []string{}},
		{name: "under map values", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, additionalProperties: {type: string, pattern: "^v"}}`,
			want: []string{`error pattern v1 ^.spec.x{*}: pattern added: (none) -> "^v": "" no longer accepted`}},
		{name: "pattern toggle off", old: `{type: string}`, new: `{type: string, pattern: "^[a-z]+$"}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Toggles[config.CheckPattern] = false },
			want:   []string{}},
		{name: "pattern toggle off leaves format on", old: `{type: string}`, new: `{type: string, pattern: "^a", format: uri}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Toggles[config.CheckPattern] = false },
			want:   []string{`error format v1 ^.spec.x: format added: (none) -> "uri"`}},
	})
}

package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestMultipleOf(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: integer, multipleOf: 5}`, new: `{type: integer, multipleOf: 5}`, want: []string{}},
		{name: "added", old: `{type: integer}`, new: `{type: integer, multipleOf: 5}`,
			want: []string{"error multipleOf v1 ^.spec.x: multipleOf added: (none) -> 5"}},
		{name: "changed to a value that does not divide the old one", old: `{type: integer, multipleOf: 2}`, new: `{type: integer, multipleOf: 3}`,
			want: []string{"error multipleOf v1 ^.spec.x: multipleOf changed: 2 -> 3"}},
		{name: "changed to a multiple of the old one", old: `{type: integer, multipleOf: 2}`, new: `{type: integer, multipleOf: 4}`,
			want: []string{"error multipleOf v1 ^.spec.x: multipleOf changed: 2 -> 4"}},
		{name: "changed to a divisor of the old one", old: `{type: integer, multipleOf: 6}`, new: `{type: integer, multipleOf: 3}`, want: []string{}},
		{name: "fractional divisor", old: `{type: number, multipleOf: 0.5}`, new: `{type: number, multipleOf: 0.25}`, want: []string{}},
		{name: "decimal divisor that floating-point division misses", old: `{type: number, multipleOf: 0.3}`, new: `{type: number, multipleOf: 0.1}`, want: []string{}},
		{name: "decimal non-divisor", old: `{type: number, multipleOf: 0.1}`, new: `{type: number, multipleOf: 0.3}`,
			want: []string{"error multipleOf v1 ^.spec.x: multipleOf changed: 0.1 -> 0.3"}},
		{name: "changed to zero", old: `{type: number, multipleOf: 2}`, new: `{type: number, multipleOf: 0}`,
			want: []string{"error multipleOf v1 ^.spec.x: multipleOf changed: 2 -> 0"}},
		{name: "fractional non-divisor", old: `{type: number, multipleOf: 0.25}`, new: `{type: number, multipleOf: 0.5}`,
			want: []string{"error multipleOf v1 ^.spec.x: multipleOf changed: 0.25 -> 0.5"}},
		{name: "removed relaxes", old: `{type: integer, multipleOf: 5}`, new: `{type: integer}`, want: []string{}},
		{name: "multipleOf toggle off", old: `{type: integer}`, new: `{type: integer, multipleOf: 5}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Toggles[config.CheckMultipleOf] = false },
			want:   []string{}},
	})
}

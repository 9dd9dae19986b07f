package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// controllerGenIntOrString is how controller-gen renders an
// intstr.IntOrString field.
const controllerGenIntOrString = `{x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}`

func TestIntOrString(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{x-kubernetes-int-or-string: true}`, new: `{x-kubernetes-int-or-string: true}`, want: []string{}},
		{name: "unchanged, controller-gen form", old: controllerGenIntOrString, new: controllerGenIntOrString, want: []string{}},
		{name: "removed: int-or-string -> string", old: `{x-kubernetes-int-or-string: true}`, new: `{type: string}`,
			want: []string{"error intOrString v1 ^.spec.x: x-kubernetes-int-or-string removed: int-or-string -> string"}},
		{name: "removed: int-or-string -> integer", old: `{x-kubernetes-int-or-string: true}`, new: `{type: integer}`,
			want: []string{"error intOrString v1 ^.spec.x: x-kubernetes-int-or-string removed: int-or-string -> integer"}},
		{name: "removed, controller-gen form: the anyOf going away is not reported again", old: controllerGenIntOrString, new: `{type: string}`,
			want: []string{"error intOrString v1 ^.spec.x: x-kubernetes-int-or-string removed: int-or-string -> string"}},
		{name: "removed to an object", old: controllerGenIntOrString, new: `{type: object}`,
			want: []string{"error intOrString v1 ^.spec.x: x-kubernetes-int-or-string removed: int-or-string -> object"}},
		{name: "integer -> int-or-string relaxes", old: `{type: integer}`, new: `{x-kubernetes-int-or-string: true}`, want: []string{}},
		{name: "string -> int-or-string relaxes", old: `{type: string}`, new: `{x-kubernetes-int-or-string: true}`, want: []string{}},
		{name: "integer -> int-or-string, controller-gen form, relaxes", old: `{type: integer}`, new: controllerGenIntOrString, want: []string{}},
		{name: "string -> int-or-string, controller-gen form with anyOf reversed, relaxes", old: `{type: string}`,
			new: `{x-kubernetes-int-or-string: true, anyOf: [{type: string}, {type: integer}]}`, want: []string{}},
		{name: "hand-written -> controller-gen form", old: `{x-kubernetes-int-or-string: true}`, new: controllerGenIntOrString, want: []string{}},
		{name: "controller-gen -> hand-written form", old: controllerGenIntOrString, new: `{x-kubernetes-int-or-string: true}`, want: []string{}},
		{name: "other constraints on an int-or-string field are still checked", old: controllerGenIntOrString,
			new:  `{x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}], pattern: "^[0-9]+%?$"}`,
			want: []string{`error pattern v1 ^.spec.x: pattern added: (none) -> "^[0-9]+%?$": "" no longer accepted`}},
		{name: "an anyOf that is not the int-or-string one is checked", old: `{x-kubernetes-int-or-string: true}`,
			new:  `{x-kubernetes-int-or-string: true, anyOf: [{type: integer, minimum: 0}, {type: string}]}`,
			want: []string{"error anyOf v1 ^.spec.x: anyOf added with 2 sub-schemas"}},
		{name: "intOrString toggle off", old: `{x-kubernetes-int-or-string: true}`, new: `{type: string}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Toggles[config.CheckIntOrString] = false },
			want:   []string{}},
	})
}

package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func toggleOff(id string) func(*config.CRDUpgradeSafety) {
	return func(c *config.CRDUpgradeSafety) { c.Checks.SameVersion.Toggles[id] = false }
}

func TestAllOf(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`, new: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`, want: []string{}},
		{name: "added", old: `{type: integer}`, new: `{type: integer, allOf: [{minimum: 1}]}`,
			want: []string{"error allOf v1 ^.spec.x: allOf added with 1 sub-schema"}},
		{name: "removed relaxes", old: `{type: integer, allOf: [{minimum: 1}]}`, new: `{type: integer}`, want: []string{}},
		{name: "branch added", old: `{type: integer, allOf: [{minimum: 1}]}`, new: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`,
			want: []string{"error allOf v1 ^.spec.x: allOf changed: 1 -> 2 sub-schemas"}},
		{name: "branch removed relaxes", old: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`, new: `{type: integer, allOf: [{maximum: 9}]}`, want: []string{}},
		{name: "branches reordered", old: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`, new: `{type: integer, allOf: [{maximum: 9}, {minimum: 1}]}`, want: []string{}},
		{name: "branch tightened", old: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`, new: `{type: integer, allOf: [{minimum: 2}, {maximum: 9}]}`,
			want: []string{"error minimum v1 ^.spec.x.allOf[0]: minimum increased: 1 -> 2"}},
		{name: "branches reordered and one tightened", old: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`, new: `{type: integer, allOf: [{maximum: 9}, {minimum: 2}]}`,
			want: []string{"error minimum v1 ^.spec.x.allOf[1]: minimum increased: 1 -> 2"}},
		{name: "duplicate branches", old: `{type: integer, allOf: [{minimum: 1}, {minimum: 1}]}`, new: `{type: integer, allOf: [{minimum: 1}, {minimum: 3}]}`,
			want: []string{"error minimum v1 ^.spec.x.allOf[1]: minimum increased: 1 -> 3"}},
		{name: "branch loosened", old: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`, new: `{type: integer, allOf: [{minimum: 1}, {maximum: 10}]}`, want: []string{}},
		{name: "property constraint inside a branch tightened",
			old:  `{type: object, properties: {a: {type: integer}}, allOf: [{properties: {a: {minimum: 1}}}]}`,
			new:  `{type: object, properties: {a: {type: integer}}, allOf: [{properties: {a: {minimum: 3}}}]}`,
			want: []string{"error minimum v1 ^.spec.x.allOf[0].a: minimum increased: 1 -> 3"}},
		{name: "property constrained by a branch",
			old:  `{type: object, properties: {a: {type: integer}, b: {type: string}}, allOf: [{properties: {a: {minimum: 1}}}]}`,
			new:  `{type: object, properties: {a: {type: integer}, b: {type: string}}, allOf: [{properties: {a: {minimum: 1}, b: {maxLength: 3}}}]}`,
			want: []string{`error allOf v1 ^.spec.x.allOf[0]: allOf branch constrains more properties: ["b"]`}},
		{name: "nested property constrained by a branch",
			old:  `{type: object, properties: {a: {type: object, properties: {c: {type: string}}}}, allOf: [{properties: {a: {properties: {}}}}]}`,
			new:  `{type: object, properties: {a: {type: object, properties: {c: {type: string}}}}, allOf: [{properties: {a: {properties: {c: {minLength: 1}}}}}]}`,
			want: []string{`error allOf v1 ^.spec.x.allOf[0].a: allOf branch constrains more properties: ["c"]`}},
		{name: "property dropped from a branch is not a field removal",
			old:  `{type: object, properties: {a: {type: integer}, b: {type: string}}, allOf: [{properties: {a: {minimum: 1}, b: {maxLength: 3}}}]}`,
			new:  `{type: object, properties: {a: {type: integer}, b: {type: string}}, allOf: [{properties: {a: {minimum: 1}}}]}`,
			want: []string{}},
		{name: "allOf toggle off", old: `{type: integer, allOf: [{minimum: 1}]}`, new: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`,
			config: toggleOff(config.CheckAllOf), want: []string{}},
		{name: "allOf toggle off: added", old: `{type: integer}`, new: `{type: integer, allOf: [{minimum: 1}]}`,
			config: toggleOff(config.CheckAllOf), want: []string{}},
		{name: "allOf toggle off: property constrained by a branch",
			old:    `{type: object, properties: {a: {type: integer}}, allOf: [{properties: {}}]}`,
			new:    `{type: object, properties: {a: {type: integer}}, allOf: [{properties: {a: {minimum: 1}}}]}`,
			config: toggleOff(config.CheckAllOf), want: []string{}},
	})
}

func TestAnyOf(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "added", old: `{type: integer}`, new: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`,
			want: []string{"error anyOf v1 ^.spec.x: anyOf added with 2 sub-schemas"}},
		{name: "removed relaxes", old: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`, new: `{type: integer}`, want: []string{}},
		{name: "branch added relaxes", old: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`, new: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}, {multipleOf: 2}]}`,
			want: []string{}},
		{name: "branch removed", old: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`, new: `{type: integer, anyOf: [{minimum: 5}]}`,
			want: []string{"error anyOf v1 ^.spec.x: anyOf changed: 2 -> 1 sub-schemas"}},
		{name: "branches reordered", old: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`, new: `{type: integer, anyOf: [{maximum: 0}, {minimum: 5}]}`, want: []string{}},
		{name: "branches reordered with a description edit", old: `{type: integer, anyOf: [{minimum: 5, description: high}, {maximum: 0}]}`,
			new: `{type: integer, anyOf: [{maximum: 0}, {minimum: 5, description: "high values"}]}`, want: []string{}},
		{name: "branches reordered and one changed", old: `{anyOf: [{type: string, pattern: "^a"}, {type: integer}]}`, new: `{anyOf: [{type: integer}, {type: string, pattern: "^b"}]}`,
			want: []string{`error pattern v1 ^.spec.x.anyOf[1]: pattern changed: "^a" -> "^b"`}},
		{name: "branch tightened", old: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`, new: `{type: integer, anyOf: [{minimum: 5}, {maximum: -1}]}`,
			want: []string{"error maximum v1 ^.spec.x.anyOf[1]: maximum decreased: 0 -> -1"}},
		{name: "required inside a branch changed",
			old:  `{type: object, properties: {a: {type: string}, b: {type: string}}, anyOf: [{required: [a]}, {required: [b]}]}`,
			new:  `{type: object, properties: {a: {type: string}, b: {type: string}}, anyOf: [{required: [a, b]}, {required: [b]}]}`,
			want: []string{`error required v1 ^.spec.x.anyOf[0]: new required fields: ["b"]`}},
		{name: "property constrained by a branch",
			old:  `{type: object, properties: {a: {type: string}}, anyOf: [{properties: {}}, {required: [a]}]}`,
			new:  `{type: object, properties: {a: {type: string}}, anyOf: [{properties: {a: {pattern: "^x"}}}, {required: [a]}]}`,
			want: []string{`error anyOf v1 ^.spec.x.anyOf[0]: anyOf branch constrains more properties: ["a"]`}},
		{name: "int-or-string anyOf as controller-gen emits it, description edited", old: `{x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}], description: port}`,
			new: `{x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}], description: "port number or name"}`, want: []string{}},
		{name: "int-or-string anyOf as controller-gen emits it, reordered", old: controllerGenIntOrString,
			new: `{x-kubernetes-int-or-string: true, anyOf: [{type: string}, {type: integer}]}`, want: []string{}},
		{name: "anyOf toggle off", old: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`, new: `{type: integer, anyOf: [{minimum: 5}]}`,
			config: toggleOff(config.CheckAnyOf), want: []string{}},
	})
}

func TestOneOf(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "added", old: `{type: object}`, new: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`,
			want: []string{"error oneOf v1 ^.spec.x: oneOf added with 2 sub-schemas"}},
		{name: "removed relaxes", old: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`, new: `{type: object}`, want: []string{}},
		{name: "branch added", old: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`, new: `{type: object, oneOf: [{required: [a]}, {required: [b]}, {required: [c]}]}`,
			want: []string{"error oneOf v1 ^.spec.x: oneOf changed: 2 -> 3 sub-schemas"}},
		{name: "branch removed", old: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`, new: `{type: object, oneOf: [{required: [a]}]}`,
			want: []string{"error oneOf v1 ^.spec.x: oneOf changed: 2 -> 1 sub-schemas"}},
		{name: "branches reordered", old: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`, new: `{type: object, oneOf: [{required: [b]}, {required: [a]}]}`,
			want: []string{}},
		{name: "enum value removed inside a branch", old: `{type: string, oneOf: [{enum: [a, b]}, {pattern: "^z"}]}`, new: `{type: string, oneOf: [{enum: [a]}, {pattern: "^z"}]}`,
			want: []string{`error enum v1 ^.spec.x.oneOf[0]: enum values removed: ["b"]`}},
		{name: "oneOf toggle off", old: `{type: object}`, new: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`,
			config: toggleOff(config.CheckOneOf), want: []string{}},
	})
}

func TestNot(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: string, not: {enum: [x]}}`, new: `{type: string, not: {enum: [x]}}`, want: []string{}},
		{name: "added", old: `{type: string}`, new: `{type: string, not: {enum: [x]}}`,
			want: []string{"error not v1 ^.spec.x: not added"}},
		{name: "changed", old: `{type: string, not: {enum: [x]}}`, new: `{type: string, not: {enum: [x, z]}}`,
			want: []string{"error not v1 ^.spec.x: not changed"}},
		{name: "loosened inside is a tightening, still reported", old: `{type: string, not: {pattern: "^a", minLength: 3}}`, new: `{type: string, not: {pattern: "^a"}}`,
			want: []string{"error not v1 ^.spec.x: not changed"}},
		{name: "removed relaxes", old: `{type: string, not: {enum: [x]}}`, new: `{type: string}`, want: []string{}},
		{name: "documentation edit inside", old: `{type: string, not: {enum: [x], description: "not x"}}`, new: `{type: string, not: {enum: [x], description: "anything but x", title: X}}`,
			want: []string{}},
		{name: "not toggle off", old: `{type: string}`, new: `{type: string, not: {enum: [x]}}`,
			config: toggleOff(config.CheckNot), want: []string{}},
	})
}

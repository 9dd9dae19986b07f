package checks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
)

func TestAllOf(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`, new: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`, want: []string{}},
		{name: "added", old: `{type: integer}`, new: `{type: integer, allOf: [{minimum: 1}]}`,
			want: []string{"error allOf v1 ^.spec.x: allOf added with 1 sub-schema"}},
		{name: "removed relaxes", old: `{type: integer, allOf: [{minimum: 1}]}`, new: `{type: integer}`, want: []string{}},
		{name: "branch added", old: `{type: integer, allOf: [{minimum: 1}]}`, new: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`,
			want: []string{"error allOf v1 ^.spec.x.allOf[1]: allOf branch added: every value must match it too"}},
		{name: "branch added that an old branch implies", old: `{type: integer, allOf: [{minimum: 1}]}`, new: `{type: integer, allOf: [{minimum: 1}, {minimum: 0}]}`,
			want: []string{}},
		{name: "branch replaced by a looser one and another added", old: `{type: integer, allOf: [{minimum: 1}]}`, new: `{type: integer, allOf: [{minimum: 0}, {maximum: 9}]}`,
			want: []string{"error allOf v1 ^.spec.x.allOf[1]: allOf branch added: every value must match it too"}},
		{name: "branches reordered and each loosened", old: `{type: integer, allOf: [{minimum: 1}, {maximum: 9}]}`, new: `{type: integer, allOf: [{maximum: 10}, {minimum: 0}]}`,
			want: []string{}},
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
			config: enginetest.ToggleOff(config.CheckAllOf), want: []string{}},
		{name: "allOf toggle off leaves the keyword checks inside branches on", old: `{type: integer, allOf: [{minimum: 1}]}`, new: `{type: integer, allOf: [{minimum: 2}]}`,
			config: enginetest.ToggleOff(config.CheckAllOf), want: []string{"error minimum v1 ^.spec.x.allOf[0]: minimum increased: 1 -> 2"}},
		{name: "allOf toggle off: added", old: `{type: integer}`, new: `{type: integer, allOf: [{minimum: 1}]}`,
			config: enginetest.ToggleOff(config.CheckAllOf), want: []string{}},
		{name: "allOf toggle off: property constrained by a branch",
			old:    `{type: object, properties: {a: {type: integer}}, allOf: [{properties: {}}]}`,
			new:    `{type: object, properties: {a: {type: integer}}, allOf: [{properties: {a: {minimum: 1}}}]}`,
			config: enginetest.ToggleOff(config.CheckAllOf), want: []string{}},
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
			want: []string{"error anyOf v1 ^.spec.x: anyOf branch 1 removed: values only it accepted are rejected"}},
		{name: "branch removed that another branch covers", old: `{type: integer, anyOf: [{minimum: 5}, {minimum: 10}, {maximum: 0}]}`, new: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`,
			want: []string{}},
		{name: "branch loosened", old: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`, new: `{type: integer, anyOf: [{minimum: 4}, {maximum: 0}]}`,
			want: []string{}},
		{name: "branch loosened and another removed that it covers", old: `{type: integer, anyOf: [{minimum: 5}, {minimum: 7}, {maximum: 0}]}`, new: `{type: integer, anyOf: [{minimum: 4}, {maximum: 0}]}`,
			want: []string{}},
		{name: "branch required dropped", old: `{type: object, properties: {a: {type: string}, b: {type: string}}, anyOf: [{required: [a, b]}, {required: [b]}]}`,
			new:  `{type: object, properties: {a: {type: string}, b: {type: string}}, anyOf: [{required: [a]}, {required: [b]}]}`,
			want: []string{}},
		{name: "branches reordered", old: `{type: integer, anyOf: [{minimum: 5}, {maximum: 0}]}`, new: `{type: integer, anyOf: [{maximum: 0}, {minimum: 5}]}`, want: []string{}},
		{name: "branches reordered with a description edit", old: `{type: integer, anyOf: [{minimum: 5, description: high}, {maximum: 0}]}`,
			new: `{type: integer, anyOf: [{maximum: 0}, {minimum: 5, description: "high values"}]}`, want: []string{}},
		{name: "branches reordered and one changed", old: `{anyOf: [{type: string, pattern: "^a"}, {type: integer}]}`, new: `{anyOf: [{type: integer}, {type: string, pattern: "^b"}]}`,
			want: []string{`error pattern v1 ^.spec.x.anyOf[1]: pattern changed: "^a" -> "^b": "a" no longer accepted`}},
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
			config: enginetest.ToggleOff(config.CheckAnyOf), want: []string{}},
	})
}

func TestOneOf(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "added", old: `{type: object}`, new: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`,
			want: []string{"error oneOf v1 ^.spec.x: oneOf added with 2 sub-schemas"}},
		{name: "removed relaxes", old: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`, new: `{type: object}`, want: []string{}},
		{name: "branch added", old: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`, new: `{type: object, oneOf: [{required: [a]}, {required: [b]}, {required: [c]}]}`,
			want: []string{"error oneOf v1 ^.spec.x.oneOf[2]: oneOf branch added: an object that matched one branch may now match two, and oneOf rejects it"}},
		{name: "branch removed", old: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`, new: `{type: object, oneOf: [{required: [a]}]}`,
			want: []string{"error oneOf v1 ^.spec.x: oneOf branch 1 removed: objects that matched only it match none"}},
		{name: "branch bound raised", old: `{type: integer, oneOf: [{maximum: 5}, {minimum: 8}]}`, new: `{type: integer, oneOf: [{maximum: 10}, {minimum: 8}]}`,
			want: []string{"error oneOf v1 ^.spec.x.oneOf[0]: oneOf branch loosened (maximum): an object that matched only another branch may now match this one too, and oneOf rejects it"}},
		{name: "branch required dropped", old: `{type: object, oneOf: [{required: [a, c]}, {required: [b]}]}`, new: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`,
			want: []string{"error oneOf v1 ^.spec.x.oneOf[0]: oneOf branch loosened (required): an object that matched only another branch may now match this one too, and oneOf rejects it"}},
		{name: "branch emptied", old: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`, new: `{type: object, oneOf: [{}, {required: [b]}]}`,
			want: []string{"error oneOf v1 ^.spec.x.oneOf[0]: oneOf branch loosened (required): an object that matched only another branch may now match this one too, and oneOf rejects it"}},
		{name: "branch tightened", old: `{type: integer, oneOf: [{maximum: 5}, {minimum: 8}]}`, new: `{type: integer, oneOf: [{maximum: 4}, {minimum: 8}]}`,
			want: []string{"error maximum v1 ^.spec.x.oneOf[0]: maximum decreased: 5 -> 4"}},
		{name: "branch tightened and loosened", old: `{type: integer, oneOf: [{maximum: 5, minimum: 0}, {minimum: 8}]}`, new: `{type: integer, oneOf: [{maximum: 6, minimum: 1}, {minimum: 8}]}`,
			want: []string{
				"error minimum v1 ^.spec.x.oneOf[0]: minimum increased: 0 -> 1",
				"error oneOf v1 ^.spec.x.oneOf[0]: oneOf branch loosened (maximum): an object that matched only another branch may now match this one too, and oneOf rejects it",
			}},
		{name: "branch documentation edited", old: `{type: integer, oneOf: [{maximum: 5, description: low}, {minimum: 8}]}`, new: `{type: integer, oneOf: [{maximum: 5, description: "low values"}, {minimum: 8}]}`,
			want: []string{}},
		{name: "oneOf loosening is found whatever the policy of the keyword", old: `{type: integer, oneOf: [{maximum: 5}, {minimum: 8}]}`, new: `{type: integer, oneOf: [{maximum: 10}, {minimum: 8}]}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Maximum.Enabled = false },
			want:   []string{"error oneOf v1 ^.spec.x.oneOf[0]: oneOf branch loosened (maximum): an object that matched only another branch may now match this one too, and oneOf rejects it"}},
		{name: "branches reordered", old: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`, new: `{type: object, oneOf: [{required: [b]}, {required: [a]}]}`,
			want: []string{}},
		{name: "enum value removed inside a branch", old: `{type: string, oneOf: [{enum: [a, b]}, {pattern: "^z"}]}`, new: `{type: string, oneOf: [{enum: [a]}, {pattern: "^z"}]}`,
			want: []string{`error enum v1 ^.spec.x.oneOf[0]: enum values removed: ["b"]`}},
		{name: "oneOf toggle off", old: `{type: object}`, new: `{type: object, oneOf: [{required: [a]}, {required: [b]}]}`,
			config: enginetest.ToggleOff(config.CheckOneOf), want: []string{}},
		{name: "oneOf toggle off: branch loosened", old: `{type: integer, oneOf: [{maximum: 5}, {minimum: 8}]}`, new: `{type: integer, oneOf: [{maximum: 10}, {minimum: 8}]}`,
			config: enginetest.ToggleOff(config.CheckOneOf), want: []string{}},
	})
}

func TestNot(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: string, not: {enum: [x]}}`, new: `{type: string, not: {enum: [x]}}`, want: []string{}},
		{name: "added", old: `{type: string}`, new: `{type: string, not: {enum: [x]}}`,
			want: []string{"error not v1 ^.spec.x: not added"}},
		{name: "value added inside: a tightening", old: `{type: string, not: {enum: [x]}}`, new: `{type: string, not: {enum: [x, z]}}`,
			want: []string{"error not v1 ^.spec.x: schema inside not loosened (enum): values it now matches are rejected"}},
		{name: "value removed inside: a relaxation", old: `{type: string, not: {enum: [x, z]}}`, new: `{type: string, not: {enum: [x]}}`,
			want: []string{}},
		{name: "loosened inside: a tightening", old: `{type: string, not: {pattern: "^a", minLength: 3}}`, new: `{type: string, not: {pattern: "^a"}}`,
			want: []string{"error not v1 ^.spec.x: schema inside not loosened (minLength): values it now matches are rejected"}},
		{name: "tightened inside: a relaxation", old: `{type: string, not: {pattern: "^a"}}`, new: `{type: string, not: {pattern: "^a", minLength: 3}}`,
			want: []string{}},
		{name: "bound raised inside: a tightening", old: `{type: integer, not: {maximum: 5}}`, new: `{type: integer, not: {maximum: 10}}`,
			want: []string{"error not v1 ^.spec.x: schema inside not loosened (maximum): values it now matches are rejected"}},
		{name: "bound lowered inside: a relaxation", old: `{type: integer, not: {maximum: 10}}`, new: `{type: integer, not: {maximum: 5}}`,
			want: []string{}},
		{name: "required dropped inside: a tightening", old: `{type: object, not: {required: [a, b]}}`, new: `{type: object, not: {required: [a]}}`,
			want: []string{"error not v1 ^.spec.x: schema inside not loosened (required): values it now matches are rejected"}},
		{name: "not inside not", old: `{type: integer, not: {not: {maximum: 5}}}`, new: `{type: integer, not: {not: {maximum: 4}}}`,
			want: []string{"error not v1 ^.spec.x: schema inside not loosened (not): values it now matches are rejected"}},
		{name: "not inside not, relaxed", old: `{type: integer, not: {not: {maximum: 4}}}`, new: `{type: integer, not: {not: {maximum: 5}}}`,
			want: []string{}},
		{name: "removed relaxes", old: `{type: string, not: {enum: [x]}}`, new: `{type: string}`, want: []string{}},
		{name: "documentation edit inside", old: `{type: string, not: {enum: [x], description: "not x"}}`, new: `{type: string, not: {enum: [x], description: "anything but x", title: X}}`,
			want: []string{}},
		{name: "not toggle off", old: `{type: string}`, new: `{type: string, not: {enum: [x]}}`,
			config: enginetest.ToggleOff(config.CheckNot), want: []string{}},
	})
}

// nestedAllOf is a schema of depth levels of allOf, each with width
// branches; bound is the maximum in the innermost branches.
func nestedAllOf(depth, width, bound int) string {
	if depth == 0 {
		return fmt.Sprintf("{maximum: %d}", bound)
	}
	branches := make([]string, width)
	for i := range branches {
		branches[i] = nestedAllOf(depth-1, width, bound+i)
	}
	return "{allOf: [" + strings.Join(branches, ", ") + "]}"
}

// TestProbeBudget: probes nest, one per branch pair per level; on a
// schema of deeply nested changed combinators they would multiply without
// end. The budget ends them with a conservative finding.
func TestProbeBudget(t *testing.T) {
	// Every bound lowered: no old branch is contained in any new one, so
	// each level probes every pair, 16^8 probes without a budget.
	old := `{type: integer, allOf: [` + nestedAllOf(8, 4, 100) + `]}`
	new := `{type: integer, allOf: [` + nestedAllOf(8, 4, 10) + `]}`
	fs := Compare(enginetest.CRDWithField(t, old), enginetest.CRDWithField(t, new), nil)
	if len(fs) == 0 {
		t.Fatal("want findings: every bound was lowered inside allOf")
	}
	// Within the budget the same shape is decided exactly: raising every
	// bound inside allOf relaxes.
	small := Compare(enginetest.CRDWithField(t, `{type: integer, allOf: [`+nestedAllOf(3, 3, 10)+`]}`),
		enginetest.CRDWithField(t, `{type: integer, allOf: [`+nestedAllOf(3, 3, 100)+`]}`), nil)
	if len(small) != 0 {
		t.Fatalf("want no findings, got:\n%s", enginetest.GoldenText(small))
	}
}

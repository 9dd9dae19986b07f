package crdupgradesafety

import (
	"fmt"
	"reflect"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// walkCombinators compares allOf, anyOf, oneOf and not. A combinator added
// where none was tightens. Branches of equal-length lists are compared one
// by one at path.allOf[i] (etc.), with every property check, after pairing
// identical branches; a reordering alone is not a finding. allOf losing branches and anyOf gaining branches
// relax; other length changes are reported.
func (r *pairRun) walkCombinators(n *node) {
	// allOf relaxes when it only lost branches (new within old), anyOf when
	// it only gained some (old within new).
	r.combinatorList(n, config.CheckAllOf, n.old.AllOf, n.new.AllOf, func(o, nw []apiextv1.JSONSchemaProps) bool { return isSubset(nw, o) })
	r.combinatorList(n, config.CheckAnyOf, intOrStringAnyOf(&n.old), intOrStringAnyOf(&n.new), isSubset)
	r.combinatorList(n, config.CheckOneOf, n.old.OneOf, n.new.OneOf, nil)
	n.old.AllOf, n.new.AllOf = nil, nil
	n.old.AnyOf, n.new.AnyOf = nil, nil
	n.old.OneOf, n.new.OneOf = nil, nil

	o, nw := n.old.Not, n.new.Not
	n.old.Not, n.new.Not = nil, nil
	if nw == nil || !n.run.vc.ToggleEnabled(config.CheckNot) {
		return
	}
	if o == nil {
		n.report(config.CheckNot, "not added")
	} else if !sameSchema(o, nw) {
		// Tightening inside "not" relaxes and vice versa: any change is reported.
		n.report(config.CheckNot, "not changed")
	}
}

// combinatorList compares one combinator's branches. relaxes, when set,
// tells whether a length change only relaxes (old, new).
func (r *pairRun) combinatorList(n *node, id string, o, nw []apiextv1.JSONSchemaProps,
	relaxes func(old, new []apiextv1.JSONSchemaProps) bool) {

	enabled := n.run.vc.ToggleEnabled(id)
	switch {
	case len(nw) == 0:
		return // removed or never there: relaxes
	case len(o) == 0:
		if enabled {
			n.report(id, "%s added with %s", id, countNoun(len(nw), "sub-schema"))
		}
	case len(o) == len(nw):
		// Pair each new branch with an identical old one; compare the
		// branches left over in order, at their new index, so that a
		// reordering beside a change is not reported as changes between
		// unrelated branches.
		used := make([]bool, len(o))
		var newLeft []int
		for j := range nw {
			matched := false
			for i := range o {
				if !used[i] && sameSchema(&o[i], &nw[j]) {
					used[i], matched = true, true
					break
				}
			}
			if !matched {
				newLeft = append(newLeft, j)
			}
		}
		k := 0
		for i := range o {
			if used[i] {
				continue
			}
			j := newLeft[k]
			k++
			r.walk(fmt.Sprintf("%s.%s[%d]", n.path, id, j), id, &o[i], &nw[j])
		}
	default:
		if relaxes != nil && relaxes(o, nw) {
			return
		}
		if enabled {
			n.report(id, "%s changed: %d -> %d sub-schemas", id, len(o), len(nw))
		}
	}
}

// intOrStringAnyOf returns s.anyOf, or nil when it is the anyOf
// [{type: integer}, {type: string}] that controller-gen emits beside
// x-kubernetes-int-or-string: it restates that keyword (checked by
// checkIntOrString) and constrains nothing more.
func intOrStringAnyOf(s *apiextv1.JSONSchemaProps) []apiextv1.JSONSchemaProps {
	b := s.AnyOf
	if s.XIntOrString && len(b) == 2 &&
		(onlyType(&b[0], "integer") && onlyType(&b[1], "string") ||
			onlyType(&b[0], "string") && onlyType(&b[1], "integer")) {
		return nil
	}
	return b
}

// onlyType reports whether s is {type: t}, documentation aside, without
// copying it.
func onlyType(s *apiextv1.JSONSchemaProps, t string) bool {
	if s.Type != t {
		return false
	}
	x := apiextv1.JSONSchemaProps{Type: t, Description: s.Description, Title: s.Title, Example: s.Example, ExternalDocs: s.ExternalDocs}
	return reflect.DeepEqual(&x, s)
}

// isSubset reports whether every schema of a equals one of b. Combinator
// lists are short; this runs only when they differ.
func isSubset(a, b []apiextv1.JSONSchemaProps) bool {
	for i := range a {
		found := false
		for j := range b {
			if sameSchema(&a[i], &b[j]) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sameSchema reports whether two schemas are equal but for documentation
// (description, title, example, externalDocs) at any depth: documentation
// edits inside a combinator are never findings.
func sameSchema(a, b *apiextv1.JSONSchemaProps) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	for _, s := range []*apiextv1.JSONSchemaProps{&x, &y} {
		s.Description, s.Title, s.Example, s.ExternalDocs = "", "", nil, nil
	}
	if !sameSchemaMap(x.Properties, y.Properties) || !sameSchemaMap(x.PatternProperties, y.PatternProperties) ||
		!sameSchemaMap(x.Definitions, y.Definitions) || !sameSchemaList(x.AllOf, y.AllOf) ||
		!sameSchemaList(x.AnyOf, y.AnyOf) || !sameSchemaList(x.OneOf, y.OneOf) || !sameSchema(x.Not, y.Not) {
		return false
	}
	if (x.Items == nil) != (y.Items == nil) ||
		x.Items != nil && (!sameSchema(x.Items.Schema, y.Items.Schema) || !sameSchemaList(x.Items.JSONSchemas, y.Items.JSONSchemas)) {
		return false
	}
	for _, p := range [][2]*apiextv1.JSONSchemaPropsOrBool{{x.AdditionalProperties, y.AdditionalProperties}, {x.AdditionalItems, y.AdditionalItems}} {
		if (p[0] == nil) != (p[1] == nil) || p[0] != nil && (p[0].Allows != p[1].Allows || !sameSchema(p[0].Schema, p[1].Schema)) {
			return false
		}
	}
	x.Properties, y.Properties, x.PatternProperties, y.PatternProperties = nil, nil, nil, nil
	x.Definitions, y.Definitions, x.Not, y.Not = nil, nil, nil, nil
	x.AllOf, y.AllOf, x.AnyOf, y.AnyOf, x.OneOf, y.OneOf = nil, nil, nil, nil, nil, nil
	x.Items, y.Items, x.AdditionalProperties, y.AdditionalProperties, x.AdditionalItems, y.AdditionalItems = nil, nil, nil, nil, nil, nil
	return reflect.DeepEqual(x, y)
}

func sameSchemaMap(a, b map[string]apiextv1.JSONSchemaProps) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !sameSchema(&av, &bv) {
			return false
		}
	}
	return true
}

func sameSchemaList(a, b []apiextv1.JSONSchemaProps) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameSchema(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

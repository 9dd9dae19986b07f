package crdupgradesafety

import (
	"fmt"
	"sort"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// pairRun compares two schemas: the same version of the old and new CRD, or
// two served versions of the new CRD. It walks both trees at once, keyed by
// path, once: O(size of the schemas).
type pairRun struct {
	vc       *config.VersionChecks
	version  string
	failMode config.FailMode
	// fieldRemoval reports properties present in old and missing in new.
	fieldRemoval bool
	// emit receives every finding of this pair (version, field, check, message).
	emit func(version, field, check, message string)
	// nodes is a stack of reusable nodes, one per depth: the walk allocates
	// none per schema position.
	nodes []*node
	depth int
}

// node is one schema position under comparison. old and new are shallow
// copies of the two schemas at path: each check reads the keywords it
// understands and clears them, so that what is left at the end is a change
// no check handled.
type node struct {
	run  *pairRun
	path string
	// combinator is the kind of the closest enclosing allOf/anyOf/oneOf/not
	// branch, "" outside of them: there, properties are constraints, not fields.
	combinator string
	old, new   apiextv1.JSONSchemaProps
}

func (n *node) report(check, format string, args ...any) {
	n.run.emit(n.run.version, n.path, check, fmt.Sprintf(format, args...))
}

// propertyChecks run in order at every node. Each is in its own file.
var propertyChecks = []func(*node){
	checkDocumentation,
	checkIntOrString, // before type: it owns type changes to and from int-or-string
	checkType,
	checkEnum,
	checkDefault,
	checkBounds,
	checkExclusiveBounds,
	checkMultipleOf,
	checkUniqueItems,
	checkPattern,
	checkFormat,
	checkNullable,
	checkRequired,
	checkPreserveUnknownFields,
	checkListType,
	checkMapType,
	checkCELValidation,
	checkUnhandled, // last: reports whatever no check cleared
}

func (r *pairRun) compareSchemas(old, new *apiextv1.JSONSchemaProps) {
	if old == nil || new == nil {
		if old != nil && new == nil && r.fieldRemoval {
			r.emit(r.version, "^", config.CheckExistingFieldRemoval, "schema removed")
		}
		return
	}
	r.walk("^", "", old, new)
}

func (r *pairRun) walk(path, combinator string, old, new *apiextv1.JSONSchemaProps) {
	if r.depth == len(r.nodes) {
		r.nodes = append(r.nodes, &node{run: r})
	}
	n := r.nodes[r.depth]
	r.depth++
	n.path, n.combinator, n.old, n.new = path, combinator, *old, *new
	r.walkProperties(n)
	r.walkItems(n)
	r.walkAdditionalProperties(n)
	r.walkCombinators(n)
	for _, check := range propertyChecks {
		check(n)
	}
	r.depth--
}

func childPath(parent, name string) string {
	if parent == "^" {
		return "^." + name
	}
	return parent + "." + name
}

// walkProperties recurses into properties present in both schemas and
// reports removed ones. New properties need no walk: a new optional field is
// safe, and a new required one is reported on its parent by checkRequired.
func (r *pairRun) walkProperties(n *node) {
	oldProps, newProps := n.old.Properties, n.new.Properties
	n.old.Properties, n.new.Properties = nil, nil
	var removed []string
	for name := range oldProps {
		newProp, ok := newProps[name]
		if !ok {
			removed = append(removed, name)
			continue
		}
		oldProp := oldProps[name]
		r.walk(childPath(n.path, name), n.combinator, &oldProp, &newProp)
	}
	if n.combinator != "" {
		// Inside a combinator branch, properties constrain fields declared
		// elsewhere: dropping one relaxes, adding one tightens.
		var added []string
		for name := range newProps {
			if _, ok := oldProps[name]; !ok {
				added = append(added, name)
			}
		}
		if len(added) > 0 && n.run.vc.ToggleEnabled(n.combinator) {
			sort.Strings(added)
			n.report(n.combinator, "%s branch constrains more properties: %s", n.combinator, quoteList(added))
		}
		return
	}
	if !r.fieldRemoval {
		return
	}
	sort.Strings(removed)
	for _, name := range removed {
		r.emit(r.version, childPath(n.path, name), config.CheckExistingFieldRemoval,
			fmt.Sprintf("existing field removed (was %s)", describeType(oldProps[name])))
	}
}

// walkItems recurses into the item schema of arrays at path[*].
func (r *pairRun) walkItems(n *node) {
	o, nw := n.old.Items, n.new.Items
	switch {
	case o == nil && nw == nil:
	case o != nil && nw != nil && o.Schema != nil && nw.Schema != nil && len(o.JSONSchemas) == 0 && len(nw.JSONSchemas) == 0:
		r.walk(n.path+"[*]", n.combinator, o.Schema, nw.Schema)
	default:
		return // tuple items or items added/removed: left for checkUnhandled
	}
	n.old.Items, n.new.Items = nil, nil
}

// walkAdditionalProperties recurses into map value schemas at path{*} and
// reports maps whose values got more restricted.
func (r *pairRun) walkAdditionalProperties(n *node) {
	o, nw := n.old.AdditionalProperties, n.new.AdditionalProperties
	n.old.AdditionalProperties, n.new.AdditionalProperties = nil, nil
	allows := func(a *apiextv1.JSONSchemaPropsOrBool) bool { return a != nil && (a.Allows || a.Schema != nil) }
	enabled := n.run.vc.ToggleEnabled(config.CheckAdditionalProperties)
	switch {
	case o != nil && isTrue(n.new.XPreserveUnknownFields) && (nw == nil || nw.Schema == nil):
		// The new object keeps every entry and validates none: it relaxes.
	case o != nil && o.Schema != nil && nw != nil && nw.Schema != nil:
		r.walk(n.path+"{*}", n.combinator, o.Schema, nw.Schema)
	case o != nil && o.Schema != nil && !allows(nw):
		if enabled {
			n.report(config.CheckAdditionalProperties, "map value schema removed: existing map entries would be pruned")
		}
	case allows(o) && o.Schema == nil && nw != nil && nw.Schema != nil:
		if enabled {
			n.report(config.CheckAdditionalProperties, "map values restricted: additionalProperties true -> a value schema of %s", describeType(*nw.Schema))
		}
	case allows(o) && o.Schema == nil && !allows(nw):
		if enabled {
			n.report(config.CheckAdditionalProperties, "additionalProperties true removed: existing map entries would be pruned")
		}
	}
	// Everything else (none -> some, false -> anything) relaxes.
}

// describeType renders a schema's type for messages.
func describeType(s apiextv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int-or-string"
	case s.Type != "":
		return s.Type
	case s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
		return "any"
	default:
		return "untyped"
	}
}

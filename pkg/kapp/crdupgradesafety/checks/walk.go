package checks

import (
	"fmt"
	"slices"
	"sort"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of existingFieldRemoval: a property of an existing version removed (walkProperties).
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckExistingFieldRemoval}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyKeepField, Loss: finding.LossWhereStored, Unaffected: finding.UnaffectedWarns})

// The descriptor of additionalProperties: a map's values tightened (walkAdditionalProperties).
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckAdditionalProperties}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyKeepUnknownFields, Unaffected: finding.UnaffectedWarns})

// pairRun compares two schemas: the same version of the old and new CRD, or
// two served versions of the new CRD. It walks both trees at once, keyed by
// path, once: O(size of the schemas). Combinator branches that changed are
// also probed (compared without reporting) to decide what their change
// means; that work is bounded by the size of the changed branches.
type pairRun struct {
	vc      *config.VersionChecks
	version string
	// pairVersion: for a servedVersion pair, the second version.
	pairVersion string
	// unhandled is what failMode decides for a change no check
	// understands (config.FailUnhandledChange).
	unhandled config.FailDecision
	// fieldRemoval reports properties present in old and missing in new.
	fieldRemoval bool
	// oldKeepsAll and newKeepsAll are the CRD-level
	// spec.preserveUnknownFields of each side: when true, the apiserver
	// prunes nothing, and objects may hold any field at any level.
	oldKeepsAll, newKeepsAll bool
	// kubeVersion is the Kubernetes version judged for, where the
	// apiserver's validation differs by version (Settings.KubeVersion).
	kubeVersion config.KubeVersion
	// sink receives every change of this pair.
	sink func(finding.Draft)
	// nodes is a stack of reusable nodes, one per depth: the walk allocates
	// none per schema position.
	nodes []*node
	depth int
	// probing counts the probes in progress; probeNodes the nodes they
	// visited (bounded by maxProbeNodes).
	probing, probeNodes int
}

// position is where a node sits and what surrounds it.
type position struct {
	path schemapath.Path
	// combinator is the kind of the closest enclosing allOf/anyOf/oneOf/not
	// branch, "" outside of them: there, properties are constraints, not fields.
	combinator string
	// root is the schema root: a resource, with apiVersion, kind and
	// metadata whatever its schema declares.
	root bool
	// oldMeta and newMeta: the node is the metadata of a resource (the
	// root or an embedded resource) on that side. Every stored object has
	// metadata fields, whatever the schema declares.
	oldMeta, newMeta bool
	// note is appended to the messages of findings at and below a field
	// that one side does not declare although stored data sits there
	// (see implicitSchema): the reason at the topmost such field; ""
	// elsewhere.
	note string
}

// node is one schema position under comparison. old and new are shallow
// copies of the two schemas at path: each check reads the keywords it
// understands and clears them, so that what is left at the end is a change
// no check handled.
type node struct {
	run *pairRun
	position
	// oldResource and newResource: each side is a resource (the root or an
	// embedded resource), read before checkEmbeddedResource clears the
	// keyword.
	oldResource, newResource bool
	old, new                 apiextv1.JSONSchemaProps
	// sameDefault: the properties with the same default on both sides,
	// read for checkRequired before walkProperties clears them.
	sameDefault map[string]bool
	// oldNumber and newNumber: the type and format each side's numeric
	// bounds are checked against (numberValidation), read for the bound
	// checks before checkFormat and checkType clear them.
	oldNumber, newNumber numberValidation
}

// report emits a change at this node under Strict enforcement: as facts
// (fact, what the fingerprint hashes) and as the check words it.
func (n *node) report(check string, fact finding.Change, format string, args ...any) {
	n.reportAt(config.EnforcementStrict, check, fact, format, args...)
}

// reportAt emits a change at this node under the given enforcement: Strict
// and Warn report (as an error or a warning finding), None does not.
func (n *node) reportAt(level config.Enforcement, check string, fact finding.Change, format string, args ...any) {
	if level.Reports() {
		n.emitAt(n.path, level, check, fact, fmt.Sprintf(format, args...))
	}
}

// reportAtField emits a Strict change at another field than n's: a
// combinator branch that has no node of its own.
func (n *node) reportAtField(field schemapath.Path, check string, fact finding.Change, format string, args ...any) {
	n.emitAt(field, config.EnforcementStrict, check, fact, fmt.Sprintf(format, args...))
}

// reportLoss emits a Strict change at this node that loses whatever data
// is stored there (map entries pruned).
func (n *node) reportLoss(check string, fact finding.Change, format string, args ...any) {
	n.emit(finding.Draft{Field: n.path, Level: config.EnforcementStrict, Check: check, Fact: fact, Message: fmt.Sprintf(format, args...), DataLoss: true})
}

func (n *node) emitAt(field schemapath.Path, level config.Enforcement, check string, fact finding.Change, msg string) {
	n.emit(finding.Draft{Field: field, Level: level, Check: check, Fact: fact, Message: msg})
}

// emit sends c, at this node's version, to the run's sink.
func (n *node) emit(c finding.Draft) {
	if n.note != "" {
		c.Message += " (" + n.note + ")"
	}
	c.Version, c.PairVersion = n.run.version, n.run.pairVersion
	n.run.sink(c)
}

// propertyCheck is one property check run at every node: the IDs it
// reports (its descriptor's; its configuration, checks.sameVersion.<id>
// and checks.servedVersion.<id>), how it runs, and its place in the order
// of the checks at a node.
type propertyCheck struct {
	ids   []string
	run   func(*node)
	order int
}

// propertyChecks run in order at every node, after the walks; each check's
// file adds itself (propertyCheckOf), so adding a property check touches
// its own file, its config ID and its docs section
// (TestEveryPropertyCheckRuns, TestEveryCheckHasADescriptor and the config
// and docs tests fail when one is missing).
var propertyChecks []propertyCheck

// propertyCheckOf adds a property check to propertyChecks, at its place in
// the order (lowest first: a check that clears what another reads runs
// before it, as its file says), and returns its descriptor (nil for a step
// that reports nothing). Called by the initialization of each check's
// file, in whatever order Go initializes them: the list is kept sorted.
func propertyCheckOf(order int, d *finding.Descriptor, run func(*node)) *finding.Descriptor {
	c := propertyCheck{run: run, order: order}
	if d != nil {
		c.ids = d.IDs
	}
	i := sort.Search(len(propertyChecks), func(i int) bool { return propertyChecks[i].order > order })
	propertyChecks = slices.Insert(propertyChecks, i, c)
	return d
}

// walkCheckIDs are the property checks compareNode runs itself, around the
// walks into sub-schemas: embedded resources (before the properties are
// walked), map values (walkAdditionalProperties) and combinator branches
// (walk_combinators.go).
var walkCheckIDs = []string{
	config.CheckAllOf, config.CheckAnyOf, config.CheckOneOf, config.CheckNot,
	config.CheckAdditionalProperties, config.CheckEmbeddedResource,
}

func (r *pairRun) compareSchemas(old, new *apiextv1.JSONSchemaProps) {
	if old == nil || new == nil {
		if old != nil && new == nil && r.fieldRemoval {
			r.sink(finding.Draft{Version: r.version, PairVersion: r.pairVersion, Field: schemapath.Root, Check: config.CheckExistingFieldRemoval,
				Fact: finding.Change{Kind: "schemaRemoved"}, Message: "schema removed", Level: config.EnforcementStrict})
		}
		return
	}
	r.walk(position{path: schemapath.Root, root: true}, old, new)
}

func (r *pairRun) walk(pos position, old, new *apiextv1.JSONSchemaProps) {
	if r.depth == len(r.nodes) {
		r.nodes = append(r.nodes, &node{run: r})
	}
	n := r.nodes[r.depth]
	r.depth++
	if r.probing > 0 {
		r.probeNodes++
	}
	n.position, n.old, n.new = pos, *old, *new
	r.compareNode(n)
	checkUnhandled(n) // last: reports whatever no step cleared
	r.depth--
}

// compareNode runs every step but checkUnhandled at one node: the checks
// that must see the declared properties, the walks into sub-schemas, then
// the keyword checks.
func (r *pairRun) compareNode(n *node) {
	n.oldResource, n.newResource = n.resource(&n.old), n.resource(&n.new)
	checkEmbeddedResource(n) // reads the declared properties
	n.sameDefault = propertiesWithSameDefault(n.new.Required, &n.old, &n.new)
	n.oldNumber, n.newNumber = numberValidationOf(&n.old), numberValidationOf(&n.new)
	r.walkProperties(n)
	r.walkItems(n)
	r.walkAdditionalProperties(n)
	r.walkCombinators(n)
	for _, check := range propertyChecks {
		check.run(n)
	}
}

// child is the position of a sub-schema: same surroundings, deeper path.
func (n *node) child(path schemapath.Path) position {
	return position{path: path, combinator: n.combinator, note: n.note}
}

// resource reports whether one side of n is a resource: apiVersion, kind
// and metadata are kept there whatever the schema declares.
func (n *node) resource(s *apiextv1.JSONSchemaProps) bool {
	return (n.root && n.combinator == "") || s.XEmbeddedResource
}

// walkProperties recurses into properties present in both schemas and
// reports removed ones. A property only one side declares is compared with
// what the other side implies for that name (implicitSchema), where stored
// objects may hold data under it: a new property where unknown fields were
// kept, under a map, or under metadata is judged like a change to existing
// data. Elsewhere a new property needs no walk: a new optional field is
// safe (nothing can be stored under its name), and a new required one is
// reported on its parent by checkRequired.
func (r *pairRun) walkProperties(n *node) {
	oldProps, newProps := n.old.Properties, n.new.Properties
	n.old.Properties, n.new.Properties = nil, nil
	if n.combinator != "" {
		r.walkBranchProperties(n, oldProps, newProps)
		return
	}
	oldResource, newResource := n.oldResource, n.newResource
	var removed []string
	common := 0
	for name, oldProp := range oldProps {
		pos := n.child(n.path.Child(name))
		newProp, ok := newProps[name]
		if !ok {
			implied, note, meta := implicitSchema(&n.new, newResource, n.newMeta, r.newKeepsAll, name)
			if implied == nil {
				removed = append(removed, name)
				continue
			}
			pos.oldMeta, pos.newMeta = oldResource && name == "metadata", meta
			if pos.note == "" {
				pos.note = "no longer declared, still kept: " + note
			}
			r.walk(pos, &oldProp, implied)
			continue
		}
		common++
		pos.oldMeta = oldResource && name == "metadata"
		pos.newMeta = newResource && name == "metadata"
		r.walk(pos, &oldProp, &newProp)
	}
	if len(newProps) > common && mayHoldUndeclared(&n.old, oldResource, n.oldMeta, r.oldKeepsAll) {
		for name, newProp := range newProps {
			if _, ok := oldProps[name]; ok {
				continue
			}
			implied, note, meta := implicitSchema(&n.old, oldResource, n.oldMeta, r.oldKeepsAll, name)
			if implied == nil {
				continue
			}
			pos := n.child(n.path.Child(name))
			pos.oldMeta, pos.newMeta = meta, newResource && name == "metadata"
			if pos.note == "" {
				pos.note = "declared where stored objects may already hold data: " + note
			}
			r.walk(pos, implied, &newProp)
		}
	}
	if !r.fieldRemoval {
		return
	}
	sort.Strings(removed)
	for _, name := range removed {
		r.sink(finding.Draft{Version: r.version, PairVersion: r.pairVersion, Field: n.path.Child(name), Check: config.CheckExistingFieldRemoval,
			Fact:    finding.Change{Kind: "removed", Old: describeType(oldProps[name])},
			Message: fmt.Sprintf("existing field removed (was %s)", describeType(oldProps[name])), Level: config.EnforcementStrict})
	}
}

// walkBranchProperties compares the properties of a combinator branch.
// There, properties constrain fields declared elsewhere: dropping one
// relaxes the branch, adding one tightens it.
func (r *pairRun) walkBranchProperties(n *node, oldProps, newProps map[string]apiextv1.JSONSchemaProps) {
	var added []string
	for name, newProp := range newProps {
		oldProp, ok := oldProps[name]
		if !ok {
			added = append(added, name)
			continue
		}
		r.walk(n.child(n.path.Child(name)), &oldProp, &newProp)
	}
	if len(added) > 0 && n.run.vc.ToggleEnabled(n.combinator) {
		sort.Strings(added)
		n.report(n.combinator, finding.Change{Kind: "propertiesConstrained", New: finding.FactJSON(added)}, "%s branch constrains more properties: %s", n.combinator, finding.QuoteList(added))
	}
}

// Schemas implied for data a side does not declare. Undeclared data may
// be null: the apiserver drops nulls only where the schema declares a
// field that is not nullable.
var (
	anySchema    = apiextv1.JSONSchemaProps{XPreserveUnknownFields: ptrTo(true), Nullable: true}
	stringSchema = apiextv1.JSONSchemaProps{Type: "string"}
	objectSchema = apiextv1.JSONSchemaProps{Type: "object"}
)

func ptrTo[T any](v T) *T { return &v }

// mayHoldUndeclared reports whether stored objects may hold data under
// some property name that schema s (one side of a node) does not declare:
// the cheap test before implicitSchema is asked name by name.
func mayHoldUndeclared(s *apiextv1.JSONSchemaProps, resource, meta, keepsAll bool) bool {
	return resource || meta || keepsAll || IsTrue(s.XPreserveUnknownFields) ||
		s.AdditionalProperties != nil && (s.AdditionalProperties.Allows || s.AdditionalProperties.Schema != nil)
}

// implicitSchema returns the schema that data stored under the property
// name is held to by schema s (one side of a node) although s does not
// declare name, and why; nil when no data can be stored there (the
// apiserver prunes it). meta tells whether the implied field is a
// resource's metadata.
//
//   - a resource (the root or an embedded resource) always has apiVersion
//     and kind (strings) and metadata;
//   - a resource's metadata always has name and generateName (strings) and
//     the other ObjectMeta fields (any value here);
//   - a map (additionalProperties) holds entries under any name, held to
//     its value schema (or to nothing for additionalProperties: true);
//   - an object that keeps unknown fields (x-kubernetes-preserve-unknown-fields,
//     or the CRD's spec.preserveUnknownFields) holds any value under any
//     name.
func implicitSchema(s *apiextv1.JSONSchemaProps, resource, meta, keepsAll bool, name string) (implied *apiextv1.JSONSchemaProps, why string, isMeta bool) {
	switch {
	case resource && (name == "apiVersion" || name == "kind"):
		return &stringSchema, "every object has apiVersion and kind", false
	case resource && name == "metadata":
		return &objectSchema, "every object has metadata", true
	case meta && (name == "name" || name == "generateName"):
		return &stringSchema, "metadata." + name + " is kept whatever the schema says", false
	case meta:
		return &anySchema, "metadata fields are kept whatever the schema says", false
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return s.AdditionalProperties.Schema, "map entries under this name were held to the additionalProperties schema", false
	case s.AdditionalProperties != nil && s.AdditionalProperties.Allows:
		return &anySchema, "additionalProperties: true keeps entries of any value", false
	case keepsAll:
		return &anySchema, "spec.preserveUnknownFields: true keeps unknown fields of any value", false
	case IsTrue(s.XPreserveUnknownFields):
		return &anySchema, "x-kubernetes-preserve-unknown-fields keeps unknown fields of any value", false
	}
	return nil, "", false
}

// isAny reports whether s accepts any value and keeps it as it is: no
// type, unknown fields preserved, nothing else set but documentation.
func isAny(s *apiextv1.JSONSchemaProps) bool {
	return s.Type == "" && IsTrue(s.XPreserveUnknownFields) && !s.XIntOrString && s.Items == nil &&
		s.Properties == nil && s.AdditionalProperties == nil
}

// walkItems recurses into the item schema of arrays at path[*].
func (r *pairRun) walkItems(n *node) {
	o, nw := n.old.Items, n.new.Items
	switch {
	case o == nil && nw == nil:
	case o != nil && nw != nil && o.Schema != nil && nw.Schema != nil && len(o.JSONSchemas) == 0 && len(nw.JSONSchemas) == 0:
		r.walk(n.child(n.path.Items()), o.Schema, nw.Schema)
	case o == nil && nw != nil && nw.Schema != nil && len(nw.JSONSchemas) == 0 && isAny(&n.old):
		// The old value was anything (an implied field, or an untyped
		// one): stored arrays hold items of any value.
		r.walk(n.child(n.path.Items()), &anySchema, nw.Schema)
	case o != nil && o.Schema != nil && len(o.JSONSchemas) == 0 && nw == nil && isAny(&n.new):
		// The new value is anything: items are no longer held to their
		// schema (which relaxes) nor given its defaults.
		r.walk(n.child(n.path.Items()), o.Schema, &anySchema)
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
	case o != nil && IsTrue(n.new.XPreserveUnknownFields) && (nw == nil || nw.Schema == nil):
		// The new object keeps every entry and validates none (entries
		// under the names it declares as properties were compared with
		// the old value schema by walkProperties): it relaxes, but for
		// what the value schema applied itself (defaults).
		if o.Schema != nil {
			pos := n.child(n.path.Values())
			if pos.note == "" {
				pos.note = "map entries are kept as unknown fields now"
			}
			r.walk(pos, o.Schema, &anySchema)
		}
	case o != nil && o.Schema != nil && nw != nil && nw.Schema != nil:
		r.walk(n.child(n.path.Values()), o.Schema, nw.Schema)
	case o == nil && nw != nil && nw.Schema != nil && (r.oldKeepsAll || IsTrue(n.old.XPreserveUnknownFields)):
		// Unknown fields of any value were kept: they are map entries now,
		// held to the value schema.
		pos := n.child(n.path.Values())
		if pos.note == "" {
			pos.note = "entries that were kept as unknown fields are held to the value schema now"
		}
		r.walk(pos, &anySchema, nw.Schema)
	case o != nil && o.Schema != nil && !allows(nw):
		if enabled {
			n.reportLoss(config.CheckAdditionalProperties, finding.Change{Kind: "valueSchemaRemoved", Old: finding.FactSchema(o.Schema)}, "map value schema removed: existing map entries would be pruned")
		}
	case allows(o) && o.Schema == nil && nw != nil && nw.Schema != nil:
		if enabled {
			n.report(config.CheckAdditionalProperties, finding.Change{Kind: "valuesRestricted", Old: "true", New: finding.FactSchema(nw.Schema)}, "map values restricted: additionalProperties true -> a value schema of %s", describeType(*nw.Schema))
		}
	case allows(o) && o.Schema == nil && !allows(nw):
		if enabled {
			n.reportLoss(config.CheckAdditionalProperties, finding.Change{Kind: "trueRemoved", Old: "true"}, "additionalProperties true removed: existing map entries would be pruned")
		}
	}
	// Everything else (none -> some where nothing was kept, false ->
	// anything) relaxes.
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

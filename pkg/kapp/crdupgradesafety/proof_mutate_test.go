package crdupgradesafety

// The schema mutations of the no-false-negatives proof (proof_test.go):
// the kinds of change real CRD upgrades make, applied at a random position
// of a real CRD's schema: bounds tightened and loosened, enum values added
// and removed, fields made required, types changed, properties removed and
// added, patterns and formats added or edited, list and map types changed,
// preserve-unknown-fields toggled, combinator branches added and edited,
// CEL rules added and edited, defaults, nullable, embedded resources and
// constraints on metadata. The caller keeps only mutated CRDs the
// apiserver accepts as an update.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/apivalidation"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestNoFalseNegativesMutations runs the proof over random mutations of
// the real CRDs (hack/fetch-crds.sh), each object aimed at the mutated
// field. Mutations the apiserver would refuse as a CRD update are skipped.
func TestNoFalseNegativesMutations(t *testing.T) {
	files := enginetest.RealCRDFiles(t)
	r := rand.New(rand.NewPCG(5, 6))
	var total proofStats
	kinds := map[string]int{}
	refused := 0
	for _, f := range files {
		raw, crd := enginetest.ReadRealCRD(t, f)
		// The apiserver's CRD validation and CEL compilation dominate the
		// cost: fewer mutations of the largest CRDs.
		perFile := 4
		switch {
		case len(raw) > 400_000:
			perFile = 2
		case len(raw) > 100_000:
			perFile = 3
		}
		served := map[string]*servedSchema{}
		for range perFile {
			mutated, version, path, kind, desc := mutateCRD(r, crd)
			if mutated == nil {
				continue
			}
			// Only the mutated version changes: prove it alone.
			old, new := singleVersion(crd, version), singleVersion(mutated, version)
			if errs := apivalidation.ValidateCRD(context.Background(), old, new); len(errs) > 0 {
				refused++
				continue
			}
			kinds[kind]++
			_, focus := enginetest.SplitCombinators(path)
			p := &proofRun{tb: t, name: fmt.Sprintf("%s: %s at %s", f, desc, path), old: old, new: new, r: r,
				focus: focus, objects: 40, maxMisses: 1, served: served}
			p.run()
			total.add(p.stats)
		}
	}
	t.Logf("mutations: %s; %d mutations refused by the apiserver; kinds: %v", total, refused, kinds)
}

// singleVersion returns crd with only the named version, served and
// stored. The result shares the version's schema with crd.
func singleVersion(crd *apiextv1.CustomResourceDefinition, version string) *apiextv1.CustomResourceDefinition {
	out := *crd
	out.Spec.Versions = nil
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			v.Served, v.Storage = true, true
			out.Spec.Versions = []apiextv1.CustomResourceDefinitionVersion{v}
		}
	}
	out.Status = apiextv1.CustomResourceDefinitionStatus{StoredVersions: []string{version}}
	return &out
}

// FuzzNoFalseNegatives runs the proof for longer: each input picks a
// source pair (a golden case, or a real CRD with itself when
// hack/fetch-crds.sh has run), applies up to three random mutations to its
// new side, and proves the pair with objects aimed at the last mutated
// field. The seed corpus is a few golden cases; go test runs only those.
//
//	go test -run '^$' -fuzz FuzzNoFalseNegatives -fuzztime 10m ./pkg/kapp/crdupgradesafety/
func FuzzNoFalseNegatives(f *testing.F) {
	type source struct {
		name     string
		old, new *apiextv1.CustomResourceDefinition
	}
	var sources []source
	for _, c := range goldenCases(f) {
		sources = append(sources, source{c.name,
			enginetest.ParseCRDStrict(f, c.dir+"/old.yaml", c.old), enginetest.ParseCRDStrict(f, c.dir+"/new.yaml", c.new)})
	}
	if dir, ok := enginetest.RealCRDDirIfPresent(f); ok {
		for _, rel := range enginetest.RealCRDFilesIn(f, dir) {
			b, err := os.ReadFile(filepath.Join(dir, rel))
			if err != nil {
				f.Fatal(err)
			}
			crd := enginetest.ParseRealCRD(f, rel, b)
			sources = append(sources, source{rel, crd, crd})
		}
	}
	for i := 0; i < len(sources) && i < 160; i += 20 {
		f.Add(uint16(i), uint64(i), uint8(1))
	}
	f.Fuzz(func(t *testing.T, index uint16, seed uint64, mutations uint8) {
		src := sources[int(index)%len(sources)]
		r := rand.New(rand.NewPCG(seed, uint64(index)))
		new, focus, name := src.new, "", src.name
		var version string
		for range int(mutations % 4) {
			mutated, v, path, _, desc := mutateCRD(r, new)
			if mutated == nil {
				continue
			}
			new, version = mutated, v
			_, focus = enginetest.SplitCombinators(path)
			name += "; " + desc + " at " + v + " " + path
		}
		old := src.old
		if version != "" {
			old, new = singleVersion(old, version), singleVersion(new, version)
			if checks.VersionsByName(old)[version] == nil {
				return // a golden case's new version
			}
		}
		if len(apivalidation.ValidateCRD(context.Background(), old, new)) > 0 {
			return // the apiserver would refuse the update
		}
		p := &proofRun{tb: t, name: name, old: old, new: new, r: r, focus: focus, objects: 20, maxMisses: 3}
		p.run()
	})
}

// schemaNode is one position of a schema, reached by eachSchemaNode.
type schemaNode struct {
	path string // engine field path, with combinator segments
	s    *apiextv1.JSONSchemaProps
	// inCombinator: inside an allOf/anyOf/oneOf/not branch, where a
	// structural schema allows only value validations.
	inCombinator bool
	root         bool
}

// eachSchemaNode calls f for every node of s, parents first, properties in
// sorted order. f may change the node; a property's change is written back
// into its parent's map.
func eachSchemaNode(s *apiextv1.JSONSchemaProps, path string, inCombinator bool, f func(n schemaNode)) {
	f(schemaNode{path: path, s: s, inCombinator: inCombinator, root: path == "^"})
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p, ok := s.Properties[name]
		if !ok {
			continue // removed by f
		}
		eachSchemaNode(&p, enginetest.ChildPath(path, name), inCombinator, f)
		s.Properties[name] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		eachSchemaNode(s.Items.Schema, path+"[*]", inCombinator, f)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		eachSchemaNode(s.AdditionalProperties.Schema, path+"{*}", inCombinator, f)
	}
	for _, c := range []struct {
		name     string
		branches []apiextv1.JSONSchemaProps
	}{{"allOf", s.AllOf}, {"anyOf", s.AnyOf}, {"oneOf", s.OneOf}} {
		for i := range c.branches {
			eachSchemaNode(&c.branches[i], fmt.Sprintf("%s.%s[%d]", path, c.name, i), true, f)
		}
	}
	if s.Not != nil {
		eachSchemaNode(s.Not, path+".not", true, f)
	}
}

// mutation changes a node and describes the change; "" when it does not
// apply to the node (which it then leaves unchanged).
type mutation func(r *rand.Rand, n schemaNode) string

// mutateCRD applies one random mutation at a random node where it applies,
// in a random version of crd (a deep copy is changed and returned), and
// returns the version, the node's path, the mutation's name and a
// description.
func mutateCRD(r *rand.Rand, crd *apiextv1.CustomResourceDefinition) (out *apiextv1.CustomResourceDefinition, version, path, name, desc string) {
	m := mutations[r.IntN(len(mutations))]
	for range 3 {
		out = crd.DeepCopy()
		v := &out.Spec.Versions[r.IntN(len(out.Spec.Versions))]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		var paths []string
		eachSchemaNode(v.Schema.OpenAPIV3Schema, "^", false, func(n schemaNode) { paths = append(paths, n.path) })
		r.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
		for _, target := range paths[:min(len(paths), 60)] {
			done := false
			eachSchemaNode(v.Schema.OpenAPIV3Schema, "^", false, func(n schemaNode) {
				if !done && n.path == target {
					done = true
					desc = m.apply(r, n)
				}
			})
			if desc != "" {
				return out, v.Name, target, m.name, desc
			}
		}
	}
	return nil, "", "", m.name, ""
}

type namedMutation struct {
	name  string
	apply mutation
}

var mutations = []namedMutation{
	{"stringBounds", mutateStringBounds}, {"numberBounds", mutateNumberBounds},
	{"collectionBounds", mutateCollectionBounds}, {"enum", mutateEnum}, {"required", mutateRequired},
	{"type", mutateType}, {"removeProperty", mutateRemoveProperty}, {"addProperty", mutateAddProperty},
	{"pattern", mutatePattern}, {"format", mutateFormat}, {"nullable", mutateNullable},
	{"default", mutateDefault}, {"listType", mutateListType}, {"mapType", mutateMapType},
	{"preserveUnknownFields", mutatePreserveUnknownFields}, {"mapToProperties", mutateMapToProperties},
	{"combinator", mutateCombinator}, {"cel", mutateCEL}, {"embeddedResource", mutateEmbeddedResource},
	{"metadata", mutateMetadata}, {"description", mutateDescription}, {"multipleOf", mutateMultipleOf},
}

func int64p(v int64) *int64       { return &v }
func float64p(v float64) *float64 { return &v }

func pickOf[T any](r *rand.Rand, vs ...T) T { return vs[r.IntN(len(vs))] }

// moveBound sets, removes or moves a bound (never below 0 for counts).
func moveBound[T int64 | float64](r *rand.Rand, p **T, values ...T) string {
	switch {
	case *p != nil && r.IntN(4) == 0:
		*p = nil
		return "removed"
	case *p != nil && r.IntN(2) == 0:
		v := **p + pickOf[T](r, -1, 1, 5)
		if _, count := any(v).(int64); count {
			v = max(v, 0)
		}
		*p = &v
	default:
		v := pickOf(r, values...)
		*p = &v
	}
	return fmt.Sprint(**p)
}

func mutateStringBounds(r *rand.Rand, n schemaNode) string {
	if n.s.Type != "string" && !(n.inCombinator && n.s.Type == "") {
		return ""
	}
	if r.IntN(2) == 0 {
		return "maxLength " + moveBound(r, &n.s.MaxLength, 0, 1, 2, 3, 5, 10, 63, 64, 253)
	}
	return "minLength " + moveBound(r, &n.s.MinLength, 0, 1, 2, 5)
}

func mutateNumberBounds(r *rand.Rand, n schemaNode) string {
	if n.s.Type != "integer" && n.s.Type != "number" {
		return ""
	}
	switch r.IntN(4) {
	case 0:
		return "maximum " + moveBound(r, &n.s.Maximum, -1, 0, 1, 2, 5, 10, 100, 1000, 65535)
	case 1:
		return "minimum " + moveBound(r, &n.s.Minimum, -1, 0, 1, 2, 5, 10)
	case 2:
		n.s.ExclusiveMaximum = !n.s.ExclusiveMaximum
		if n.s.Maximum == nil {
			n.s.Maximum = float64p(100)
		}
		return fmt.Sprintf("exclusiveMaximum %v", n.s.ExclusiveMaximum)
	default:
		n.s.ExclusiveMinimum = !n.s.ExclusiveMinimum
		if n.s.Minimum == nil {
			n.s.Minimum = float64p(0)
		}
		return fmt.Sprintf("exclusiveMinimum %v", n.s.ExclusiveMinimum)
	}
}

func mutateCollectionBounds(r *rand.Rand, n schemaNode) string {
	switch n.s.Type {
	case "array":
		if r.IntN(2) == 0 {
			return "maxItems " + moveBound(r, &n.s.MaxItems, 0, 1, 2, 3, 16)
		}
		return "minItems " + moveBound(r, &n.s.MinItems, 0, 1, 2)
	case "object":
		if r.IntN(2) == 0 {
			return "maxProperties " + moveBound(r, &n.s.MaxProperties, 0, 1, 2, 5)
		}
		return "minProperties " + moveBound(r, &n.s.MinProperties, 0, 1, 2)
	}
	return ""
}

func jsonValues(vs ...any) []apiextv1.JSON {
	out := make([]apiextv1.JSON, len(vs))
	for i, v := range vs {
		b, _ := json.Marshal(v)
		out[i] = apiextv1.JSON{Raw: b}
	}
	return out
}

func mutateEnum(r *rand.Rand, n schemaNode) string {
	var candidates []apiextv1.JSON
	switch n.s.Type {
	case "string":
		candidates = jsonValues("a", "b", "aaa", "", "Always", "IfNotPresent")
	case "integer":
		candidates = jsonValues(0, 1, 2, 100)
	default:
		return ""
	}
	switch {
	case len(n.s.Enum) > 1 && r.IntN(2) == 0:
		i := r.IntN(len(n.s.Enum))
		removed := string(n.s.Enum[i].Raw)
		n.s.Enum = slices.Delete(slices.Clone(n.s.Enum), i, i+1)
		return "enum value removed: " + removed
	case len(n.s.Enum) > 0 && r.IntN(3) == 0:
		n.s.Enum = nil
		return "enum dropped"
	case len(n.s.Enum) > 0:
		n.s.Enum = append(slices.Clone(n.s.Enum), candidates[r.IntN(len(candidates))])
		return "enum value added"
	default:
		r.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
		n.s.Enum = candidates[:1+r.IntN(3)]
		return "enum added"
	}
}

func propertyNames(s *apiextv1.JSONSchemaProps) []string {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func mutateRequired(r *rand.Rand, n schemaNode) string {
	names := propertyNames(n.s)
	if n.inCombinator && len(n.s.Required) > 0 && (len(names) == 0 || r.IntN(2) == 0) {
		// A branch's required list loosened or tightened: under oneOf a
		// looser branch can match objects another branch matches too.
		if len(n.s.Required) > 1 && r.IntN(2) == 0 {
			n.s.Required = []string{n.s.Required[r.IntN(len(n.s.Required))]}
			return "branch requires only " + n.s.Required[0]
		}
		name := n.s.Required[r.IntN(len(n.s.Required))]
		n.s.Required = slices.DeleteFunc(slices.Clone(n.s.Required), func(s string) bool { return s == name })
		return "branch no longer requires " + name
	}
	if n.root || len(names) == 0 {
		return ""
	}
	if len(n.s.Required) > 0 && r.IntN(3) == 0 {
		i := r.IntN(len(n.s.Required))
		name := n.s.Required[i]
		n.s.Required = slices.Delete(slices.Clone(n.s.Required), i, i+1)
		return "no longer required: " + name
	}
	name := names[r.IntN(len(names))]
	if slices.Contains(n.s.Required, name) {
		return ""
	}
	n.s.Required = append(slices.Clone(n.s.Required), name)
	return "required: " + name
}

func mutateType(r *rand.Rand, n schemaNode) string {
	if n.inCombinator {
		return ""
	}
	switch {
	case n.s.XIntOrString:
		n.s.XIntOrString = false
		n.s.AnyOf = nil
		n.s.Type = pickOf(r, "string", "integer")
		return "int-or-string -> " + n.s.Type
	case n.s.Type == "string" || n.s.Type == "integer" || n.s.Type == "number" || n.s.Type == "boolean":
		old := n.s.Type
		if (old == "string" || old == "integer") && r.IntN(3) == 0 {
			n.s.Type = ""
			n.s.XIntOrString = true
			return old + " -> int-or-string"
		}
		n.s.Type = pickOf(r, "string", "integer", "number", "boolean")
		if n.s.Type == old {
			return ""
		}
		// Keywords of the old type would make the schema invalid.
		n.s.Format, n.s.Pattern, n.s.MaxLength, n.s.MinLength, n.s.Enum, n.s.Default = "", "", nil, nil, nil, nil
		n.s.Maximum, n.s.Minimum, n.s.MultipleOf = nil, nil, nil
		return old + " -> " + n.s.Type
	}
	return ""
}

func mutateRemoveProperty(r *rand.Rand, n schemaNode) string {
	names := propertyNames(n.s)
	if len(names) == 0 || n.root {
		return ""
	}
	name := names[r.IntN(len(names))]
	delete(n.s.Properties, name)
	n.s.Required = slices.DeleteFunc(slices.Clone(n.s.Required), func(s string) bool { return s == name })
	return "property removed: " + name
}

func newPropertySchema(r *rand.Rand) apiextv1.JSONSchemaProps {
	switch r.IntN(4) {
	case 0:
		return apiextv1.JSONSchemaProps{Type: "integer"}
	case 1:
		return apiextv1.JSONSchemaProps{Type: "string", MaxLength: int64p(3)}
	case 2:
		return apiextv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{"x": {Type: "string"}}}
	default:
		return apiextv1.JSONSchemaProps{Type: "string", Default: &apiextv1.JSON{Raw: []byte(`"d"`)}}
	}
}

func mutateAddProperty(r *rand.Rand, n schemaNode) string {
	if n.inCombinator || n.s.Type != "object" || n.s.AdditionalProperties != nil {
		return ""
	}
	// Under preserve-unknown-fields the generator writes unknown fields with
	// the new schema's property names.
	name := pickOf(r, "k1", "extra")
	if _, ok := n.s.Properties[name]; ok {
		return ""
	}
	if n.s.Properties == nil {
		n.s.Properties = map[string]apiextv1.JSONSchemaProps{}
	}
	n.s.Properties[name] = newPropertySchema(r)
	desc := "property added: " + name
	if r.IntN(4) == 0 {
		n.s.Required = append(slices.Clone(n.s.Required), name)
		desc += " (required)"
	}
	return desc
}

// patternEdits rewrite a pattern into a related one (tighter, looser or
// equivalent).
var patternEdits = []func(string) string{
	func(p string) string { return strings.Replace(p, "+", "{1,3}", 1) },
	func(p string) string { return strings.Replace(p, "*", "+", 1) },
	func(p string) string { return strings.Replace(p, "a-z", "a-y", 1) },
	func(p string) string { return strings.Replace(p, "a-z", "a-zA-Z", 1) },
	func(p string) string { return strings.Replace(p, "0-9", "1-9", 1) },
	func(p string) string { return "^" + strings.TrimPrefix(p, "^") },
	func(p string) string { return strings.TrimPrefix(strings.TrimSuffix(p, "$"), "^") },
	func(p string) string { return "(?:" + p + ")|^x$" },
	func(p string) string { return "(?i)" + p },
	func(p string) string { return p + "$" },
}

func mutatePattern(r *rand.Rand, n schemaNode) string {
	if n.s.Type != "string" && !(n.inCombinator && n.s.Type == "") {
		return ""
	}
	switch {
	case n.s.Pattern != "" && r.IntN(4) == 0:
		n.s.Pattern = ""
		return "pattern removed"
	case n.s.Pattern != "":
		old := n.s.Pattern
		n.s.Pattern = patternEdits[r.IntN(len(patternEdits))](old)
		if n.s.Pattern == old {
			return ""
		}
		return "pattern " + old + " -> " + n.s.Pattern
	default:
		n.s.Pattern = pickOf(r, `^[a-z]+$`, `^[a-z0-9-]*$`, `^.{0,5}$`, `[0-9]`, `^a`, `.*`, `^[^/]*$`)
		return "pattern added: " + n.s.Pattern
	}
}

func mutateFormat(r *rand.Rand, n schemaNode) string {
	if n.s.Type != "string" {
		return ""
	}
	old := n.s.Format
	n.s.Format = pickOf(r, "uuid", "uuid4", "date-time", "datetime", "hostname", "int32", "password", "k8s-short-name", "email", "byte", "")
	if n.s.Format == old {
		return ""
	}
	return fmt.Sprintf("format %q -> %q", old, n.s.Format)
}

func mutateNullable(_ *rand.Rand, n schemaNode) string {
	if n.inCombinator || n.root {
		return ""
	}
	n.s.Nullable = !n.s.Nullable
	return fmt.Sprintf("nullable %v", n.s.Nullable)
}

func mutateDefault(r *rand.Rand, n schemaNode) string {
	if n.inCombinator || n.root {
		return ""
	}
	var v any
	switch n.s.Type {
	case "string":
		v = pickOf(r, "d", "a", "")
	case "integer":
		v = pickOf(r, 0, 1, 7)
	case "number":
		v = pickOf(r, 0.5, 2.0)
	case "boolean":
		v = r.IntN(2) == 0
	case "object":
		v = map[string]any{}
	default:
		return ""
	}
	if n.s.Default != nil && r.IntN(3) == 0 {
		n.s.Default = nil
		return "default removed"
	}
	b, _ := json.Marshal(v)
	n.s.Default = &apiextv1.JSON{Raw: b}
	return "default " + string(b)
}

func mutateListType(r *rand.Rand, n schemaNode) string {
	if n.inCombinator || n.s.Type != "array" || n.s.Items == nil || n.s.Items.Schema == nil {
		return ""
	}
	items := n.s.Items.Schema
	switch t := pickOf(r, "atomic", "set", "map", ""); t {
	case "":
		n.s.XListType, n.s.XListMapKeys = nil, nil
		return "list type removed"
	case "map":
		var keys []string
		for _, name := range propertyNames(items) {
			if p := items.Properties[name]; p.Type == "string" || p.Type == "integer" {
				keys = append(keys, name)
			}
		}
		if len(keys) == 0 {
			return ""
		}
		n.s.XListType = &t
		n.s.XListMapKeys = []string{keys[r.IntN(len(keys))]}
		if !slices.Contains(items.Required, n.s.XListMapKeys[0]) {
			items.Required = append(slices.Clone(items.Required), n.s.XListMapKeys[0])
		}
		return "list type map, keys " + n.s.XListMapKeys[0]
	default:
		n.s.XListType, n.s.XListMapKeys = &t, nil
		return "list type " + t
	}
}

func mutateMapType(r *rand.Rand, n schemaNode) string {
	if n.inCombinator || n.s.Type != "object" {
		return ""
	}
	t := pickOf(r, "atomic", "granular")
	n.s.XMapType = &t
	return "map type " + t
}

func mutatePreserveUnknownFields(r *rand.Rand, n schemaNode) string {
	if n.inCombinator || n.s.Type != "object" {
		return ""
	}
	if checks.IsTrue(n.s.XPreserveUnknownFields) {
		if r.IntN(2) == 0 {
			n.s.XPreserveUnknownFields = nil
			return "preserve-unknown-fields removed"
		}
		return mutateAddProperty(r, n)
	}
	t := true
	n.s.XPreserveUnknownFields = &t
	return "preserve-unknown-fields added"
}

// mutateMapToProperties turns a map into an object that keeps unknown
// fields and declares typed properties, or drops its value schema.
func mutateMapToProperties(r *rand.Rand, n schemaNode) string {
	if n.inCombinator || n.s.AdditionalProperties == nil {
		return ""
	}
	if r.IntN(3) == 0 {
		n.s.AdditionalProperties = nil
		return "additionalProperties removed"
	}
	t := true
	n.s.AdditionalProperties = nil
	n.s.XPreserveUnknownFields = &t
	n.s.Properties = map[string]apiextv1.JSONSchemaProps{"k1": {Type: "integer"}, "extra": {Type: "string", MaxLength: int64p(1)}}
	return "map -> preserve-unknown-fields with properties"
}

func mutateCombinator(r *rand.Rand, n schemaNode) string {
	names := propertyNames(n.s)
	if n.inCombinator || n.root || len(names) == 0 {
		return ""
	}
	a, b := names[r.IntN(len(names))], names[r.IntN(len(names))]
	req := func(names ...string) apiextv1.JSONSchemaProps { return apiextv1.JSONSchemaProps{Required: names} }
	switch r.IntN(6) {
	case 0:
		n.s.OneOf = append(slices.Clone(n.s.OneOf), req(a), req(b))
		return "oneOf branches added: " + a + ", " + b
	case 1:
		n.s.AnyOf = append(slices.Clone(n.s.AnyOf), req(a))
		return "anyOf branch added: " + a
	case 2:
		p := n.s.Properties[a]
		if p.Type != "string" {
			return ""
		}
		n.s.AllOf = append(slices.Clone(n.s.AllOf), apiextv1.JSONSchemaProps{Properties: map[string]apiextv1.JSONSchemaProps{a: {MaxLength: int64p(2)}}})
		return "allOf branch added: " + a + " maxLength 2"
	case 3:
		n.s.Not = &apiextv1.JSONSchemaProps{Required: []string{a}}
		return "not added: " + a
	default:
		for _, list := range []*[]apiextv1.JSONSchemaProps{&n.s.AllOf, &n.s.AnyOf, &n.s.OneOf} {
			if len(*list) > 0 {
				i := r.IntN(len(*list))
				*list = slices.Delete(slices.Clone(*list), i, i+1)
				if len(*list) == 0 {
					*list = nil
				}
				return "combinator branch removed"
			}
		}
		return ""
	}
}

func mutateCEL(r *rand.Rand, n schemaNode) string {
	if n.inCombinator {
		return ""
	}
	if len(n.s.XValidations) > 0 && r.IntN(3) == 0 {
		i := r.IntN(len(n.s.XValidations))
		rules := slices.Clone(n.s.XValidations)
		if r.IntN(2) == 0 {
			rules = slices.Delete(rules, i, i+1)
			n.s.XValidations = rules
			return "CEL rule removed"
		}
		rules[i].Rule = "(" + rules[i].Rule + ") && true"
		n.s.XValidations = rules
		return "CEL rule rewritten"
	}
	var rule string
	switch n.s.Type {
	case "string":
		rule = pickOf(r, "self.size() <= 3", "self != 'a'")
	case "integer":
		rule = pickOf(r, "self <= 10", "self % 2 == 0")
	case "number":
		rule = "self <= 10.0"
	case "boolean":
		rule = "self"
	case "array":
		rule = "self.size() <= 1"
	case "object":
		names := propertyNames(n.s)
		switch {
		case n.s.AdditionalProperties != nil:
			rule = "self.size() <= 1"
		case len(names) > 0:
			rule = "has(self." + names[r.IntN(len(names))] + ")"
		default:
			return ""
		}
	default:
		return ""
	}
	n.s.XValidations = append(slices.Clone(n.s.XValidations), apiextv1.ValidationRule{Rule: rule})
	return "CEL rule added: " + rule
}

func mutateEmbeddedResource(_ *rand.Rand, n schemaNode) string {
	if n.inCombinator || n.root || n.s.Type != "object" || n.s.XEmbeddedResource {
		return ""
	}
	t := true
	n.s.XEmbeddedResource = true
	n.s.XPreserveUnknownFields = &t
	return "embedded resource"
}

func mutateMetadata(r *rand.Rand, n schemaNode) string {
	if !n.root {
		return ""
	}
	name := apiextv1.JSONSchemaProps{Type: "string"}
	if r.IntN(2) == 0 {
		name.MaxLength = int64p(pickOf[int64](r, 10, 40, 63))
	} else {
		name.Pattern = pickOf(r, `^[a-z0-9-]+$`, `^n[a-z]*$`)
	}
	if n.s.Properties == nil {
		n.s.Properties = map[string]apiextv1.JSONSchemaProps{}
	}
	n.s.Properties["metadata"] = apiextv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{"name": name}}
	return "metadata.name constrained"
}

func mutateDescription(_ *rand.Rand, n schemaNode) string {
	if n.inCombinator {
		return ""
	}
	n.s.Description += " (edited)"
	return "description edited"
}

func mutateMultipleOf(r *rand.Rand, n schemaNode) string {
	if n.s.Type != "integer" && n.s.Type != "number" {
		return ""
	}
	n.s.MultipleOf = float64p(pickOf[float64](r, 1, 2, 3, 4))
	if n.s.Type == "number" && r.IntN(2) == 0 {
		n.s.MultipleOf = float64p(0.5)
	}
	return fmt.Sprintf("multipleOf %v", *n.s.MultipleOf)
}

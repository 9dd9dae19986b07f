package prooftest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// servedSchema is one version of a CRD as the apiserver serves it.
type ServedSchema struct {
	GVK        schema.GroupVersionKind
	Namespaced bool
	// keepsAll: the CRD's spec.preserveUnknownFields, under which the
	// apiserver prunes nothing.
	KeepsAll   bool
	Structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
	scale      *apiextv1.CustomResourceSubresourceScale
}

// newServedSchema builds what apiextensions-apiserver's CRD handler builds
// for one version (customresource_handler.go, getOrCreateServingInfoFor).
func NewServedSchema(crd *apiextv1.CustomResourceDefinition, version string) (*ServedSchema, error) {
	v := checks.VersionsByName(crd)[version]
	if v == nil || v.Schema == nil {
		return nil, fmt.Errorf("version %s has no schema", version)
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("converting schema: %w", err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("structural schema: %w", err)
	}
	keepsAll := crd.Spec.PreserveUnknownFields
	if !keepsAll {
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			return nil, fmt.Errorf("pruning defaults: %w", err)
		}
	}
	validator, _, err := validation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("schema validator: %w", err)
	}
	var scale *apiextv1.CustomResourceSubresourceScale
	if v.Subresources != nil {
		scale = v.Subresources.Scale
	}
	return &ServedSchema{
		GVK:        schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind},
		Namespaced: crd.Spec.Scope == apiextv1.NamespaceScoped,
		KeepsAll:   keepsAll,
		Structural: s,
		validator:  validator,
		cel:        cel.NewValidator(s, true, celconfig.PerCallLimit),
		scale:      scale,
	}, nil
}

// decode applies to obj what the apiserver's decoder applies to a custom
// resource (unstructuredSchemaCoercer.apply, then the defaulter): metadata
// coercion, pruning of unknown fields, removal of nulls the schema does
// not allow, then defaulting. A request keeps malformed metadata (the
// strategy rejects it), a read from etcd drops it
// (dropInvalidMetadata).
func (s *ServedSchema) Decode(obj map[string]any, dropInvalidMetadata bool) error {
	if err := s.DecodeWithoutDefaults(obj, dropInvalidMetadata); err != nil {
		return err
	}
	structuraldefaulting.Default(obj, s.Structural)
	return nil
}

// decodeWithoutDefaults is decode without its last step, defaulting.
func (s *ServedSchema) DecodeWithoutDefaults(obj map[string]any, dropInvalidMetadata bool) error {
	kind, foundKind, err := unstructured.NestedString(obj, "kind")
	if err != nil {
		return err
	}
	apiVersion, foundAPIVersion, err := unstructured.NestedString(obj, "apiVersion")
	if err != nil {
		return err
	}
	meta, foundMeta, _, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{DropMalformedFields: dropInvalidMetadata})
	if err != nil {
		return err
	}
	if !s.KeepsAll {
		structuralpruning.PruneWithOptions(obj, s.Structural, true, structuralschema.UnknownFieldPathOptions{})
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s.Structural)
	}
	if ferr, _ := schemaobjectmeta.CoerceWithOptions(nil, obj, s.Structural, false, schemaobjectmeta.CoerceOptions{DropInvalidFields: dropInvalidMetadata}); ferr != nil {
		return ferr
	}
	if foundKind {
		obj["kind"] = kind
	}
	if foundAPIVersion {
		obj["apiVersion"] = apiVersion
	}
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(obj, meta); err != nil {
			return err
		}
	}
	return nil
}

// validate is customResourceStrategy.Validate, the validation of a create:
// type and object metadata, the OpenAPI schema, the scale subresource's
// paths, embedded resources, list sets and maps, then the CEL rules unless
// an error already blocks them.
func (s *ServedSchema) Validate(obj map[string]any) field.ErrorList {
	u := &unstructured.Unstructured{Object: obj}
	var errs field.ErrorList
	if u.GetKind() != s.GVK.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), "must be "+s.GVK.Kind))
	}
	if u.GetAPIVersion() != s.GVK.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), "must be "+s.GVK.GroupVersion().String()))
	}
	if len(errs) > 0 {
		return errs
	}
	errs = append(errs, apivalidation.ValidateObjectMetaAccessor(u, s.Namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, validation.ValidateCustomResource(nil, obj, s.validator)...)
	errs = append(errs, s.validateScale(obj)...)
	errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, obj, s.Structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.Structural, obj)...)
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return errs // hasBlockingErr: the CEL rules are not run
		}
	}
	celErrs, _ := s.cel.Validate(context.Background(), nil, s.Structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// validateScale is customResourceValidator.ValidateScaleSpec and
// ValidateScaleStatus: the replicas paths hold non-negative int32s, the
// label selector path a string.
func (s *ServedSchema) validateScale(obj map[string]any) field.ErrorList {
	if s.scale == nil {
		return nil
	}
	var errs field.ErrorList
	for _, p := range []string{s.scale.SpecReplicasPath, s.scale.StatusReplicasPath} {
		v, _, err := unstructured.NestedInt64(obj, strings.Split(strings.TrimPrefix(p, "."), ".")...)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(field.NewPath(p), v, err.Error()))
		case v < 0:
			errs = append(errs, field.Invalid(field.NewPath(p), v, "should be a non-negative integer"))
		case v > math.MaxInt32:
			errs = append(errs, field.Invalid(field.NewPath(p), v, "should be less than or equal to 2147483647"))
		}
	}
	if p := s.scale.LabelSelectorPath; p != nil {
		if v, _, err := unstructured.NestedString(obj, strings.Split(strings.TrimPrefix(*p, "."), ".")...); err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*p), v, err.Error()))
		}
	}
	return errs
}

// singleVersion returns crd with only the named version, served and
// stored. The result shares the version's schema with crd.
func SingleVersion(crd *apiextv1.CustomResourceDefinition, version string) *apiextv1.CustomResourceDefinition {
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

// mutateCRD applies one random mutation at a random node where it applies,
// in a random version of crd (a deep copy is changed and returned), and
// returns the version, the node's path, the mutation's name and a
// description.
func MutateCRD(r *rand.Rand, crd *apiextv1.CustomResourceDefinition) (out *apiextv1.CustomResourceDefinition, version, path, name, desc string) {
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

// goldenCase is one directory of testdata/: old.yaml and new.yaml (full
// apiextensions.k8s.io/v1 CRDs), an optional config.yaml (the `config` map
// of the CRDUpgradeSafety preflight rule) and expected.txt.
type GoldenCase struct {
	Name     string
	Dir      string
	Old, New []byte
	Config   []byte // nil when the case has no config.yaml
}

// goldenCases lists the case directories of testdata/ (fuzz corpora are
// not cases), sorted by name.
func GoldenCases(tb testing.TB) []GoldenCase {
	tb.Helper()
	root := testdataDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		tb.Fatalf("reading testdata: %v", err)
	}
	var cases []GoldenCase
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "fuzz" {
			continue
		}
		dir := filepath.Join(root, e.Name())
		c := GoldenCase{Name: e.Name(), Dir: dir, Old: enginetest.ReadFile(tb, dir, "old.yaml"), New: enginetest.ReadFile(tb, dir, "new.yaml")}
		if b, err := os.ReadFile(filepath.Join(dir, "config.yaml")); err == nil {
			c.Config = b
		} else if !os.IsNotExist(err) {
			tb.Fatalf("reading %s/config.yaml: %v", dir, err)
		}
		cases = append(cases, c)
	}
	if len(cases) == 0 {
		tb.Fatal("no cases in testdata/")
	}
	return cases
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

// testdataDir is the engine's golden cases, pkg/kapp/crdupgradesafety/testdata,
// relative to the working directory of the test that reads them (a
// package's directory), so that the path in a failure is short.
func testdataDir() string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata")
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, dir); err == nil {
			return rel
		}
	}
	return dir
}

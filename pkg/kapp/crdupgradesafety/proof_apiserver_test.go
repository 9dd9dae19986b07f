package crdupgradesafety

// The apiserver side of the no-false-negatives proof (proof_test.go): one
// version of a CRD served the way kube-apiserver serves it, built from the
// apiextensions-apiserver code itself (the structural schema with pruned
// defaults, the OpenAPI schema validator, the CEL validator), and the
// decoding and validation steps the apiserver applies to a custom resource
// on a request and when reading it from etcd. The steps are composed here
// in the order of apiextensions-apiserver v0.35's customresource_handler.go
// (unstructuredSchemaCoercer, unstructuredDefaulter) and
// registry/customresource (customResourceStrategy.Validate and
// customResourceValidator): importing that registry package would pull
// etcd's client into the module for a few lines of glue.

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

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
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// servedSchema is one version of a CRD as the apiserver serves it.
type servedSchema struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	// keepsAll: the CRD's spec.preserveUnknownFields, under which the
	// apiserver prunes nothing.
	keepsAll   bool
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
	scale      *apiextv1.CustomResourceSubresourceScale
}

// newServedSchema builds what apiextensions-apiserver's CRD handler builds
// for one version (customresource_handler.go, getOrCreateServingInfoFor).
func newServedSchema(crd *apiextv1.CustomResourceDefinition, version string) (*servedSchema, error) {
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
	return &servedSchema{
		gvk:        schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind},
		namespaced: crd.Spec.Scope == apiextv1.NamespaceScoped,
		keepsAll:   keepsAll,
		structural: s,
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
func (s *servedSchema) decode(obj map[string]any, dropInvalidMetadata bool) error {
	if err := s.decodeWithoutDefaults(obj, dropInvalidMetadata); err != nil {
		return err
	}
	structuraldefaulting.Default(obj, s.structural)
	return nil
}

// decodeWithoutDefaults is decode without its last step, defaulting.
func (s *servedSchema) decodeWithoutDefaults(obj map[string]any, dropInvalidMetadata bool) error {
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
	if !s.keepsAll {
		structuralpruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{})
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s.structural)
	}
	if ferr, _ := schemaobjectmeta.CoerceWithOptions(nil, obj, s.structural, false, schemaobjectmeta.CoerceOptions{DropInvalidFields: dropInvalidMetadata}); ferr != nil {
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
func (s *servedSchema) validate(obj map[string]any) field.ErrorList {
	u := &unstructured.Unstructured{Object: obj}
	var errs field.ErrorList
	if u.GetKind() != s.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), "must be "+s.gvk.Kind))
	}
	if u.GetAPIVersion() != s.gvk.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), "must be "+s.gvk.GroupVersion().String()))
	}
	if len(errs) > 0 {
		return errs
	}
	errs = append(errs, apivalidation.ValidateObjectMetaAccessor(u, s.namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, validation.ValidateCustomResource(nil, obj, s.validator)...)
	errs = append(errs, s.validateScale(obj)...)
	errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, obj, s.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return errs // hasBlockingErr: the CEL rules are not run
		}
	}
	celErrs, _ := s.cel.Validate(context.Background(), nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// validateScale is customResourceValidator.ValidateScaleSpec and
// ValidateScaleStatus: the replicas paths hold non-negative int32s, the
// label selector path a string.
func (s *servedSchema) validateScale(obj map[string]any) field.ErrorList {
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

// normalizeJSON round-trips a value through JSON as the apiserver stores
// it: integers become int64, other numbers float64.
func normalizeJSON(v map[string]any) (map[string]any, error) {
	b, err := utiljson.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// dataPath is a path into an object: string keys and int indexes.
type dataPath []any

func (p dataPath) String() string {
	var b strings.Builder
	for _, e := range p {
		switch e := e.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(e) + "]")
		default:
			b.WriteString("." + e.(string))
		}
	}
	return b.String()
}

// errorPath is the data path of a validation error. kube-openapi reports
// a failed allOf/anyOf/oneOf/not without a field, naming it quoted at the
// start of the message instead ("spec.x" must validate ...).
func errorPath(e *field.Error, obj any) dataPath {
	return parseErrorPath(errorField(e), obj)
}

// parseErrorPath splits the field path of a validation error into a data
// path. The validators write paths in two styles, "spec.items.0.name"
// (kube-openapi) and "spec.items[0].name" or "spec.labels[key]"
// (field.Path); the object tells an index from a key. Keys the generator
// writes never contain '.', '[' or ']'.
func parseErrorPath(path string, obj any) dataPath {
	if path == "" || path == "<nil>" {
		return nil
	}
	tokens := strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' || r == ']' })
	var out dataPath
	cur := obj
	for _, tok := range tokens {
		if list, ok := cur.([]any); ok {
			if i, err := strconv.Atoi(tok); err == nil {
				out = append(out, i)
				if i >= 0 && i < len(list) {
					cur = list[i]
				} else {
					cur = nil
				}
				continue
			}
		}
		out = append(out, tok)
		if m, ok := cur.(map[string]any); ok {
			cur = m[tok]
		} else {
			cur = nil
		}
	}
	return out
}

// schemaPath renders a data path as the engine's field path (^.spec.x,
// [*] for list items, {*} for map values) by following the schema: a key
// is a property where the schema declares it and a map value where the
// schema has additionalProperties.
func schemaPath(s *structuralschema.Structural, p dataPath) string {
	out := "^"
	for _, e := range p {
		if _, ok := e.(int); ok {
			out += "[*]"
			if s != nil {
				s = s.Items
			}
			continue
		}
		key := e.(string)
		switch {
		case s == nil:
			out = enginetest.ChildPath(out, key)
		case hasProperty(s, key):
			out = enginetest.ChildPath(out, key)
			prop := s.Properties[key]
			s = &prop
		case s.AdditionalProperties != nil:
			out += "{*}"
			s = s.AdditionalProperties.Structural
		default:
			out = enginetest.ChildPath(out, key)
			s = nil
		}
	}
	return out
}

// storable reports whether an object stored under m can hold a value at
// p: the CRD keeps unknown fields, or every key is a property, a map value,
// or under a node that preserves unknown fields (or is the metadata of a
// resource).
func (m *servedSchema) storable(p dataPath) bool {
	if m.keepsAll {
		return true
	}
	s := m.structural
	for i, e := range p {
		if s == nil {
			return false
		}
		if s.XPreserveUnknownFields {
			return true
		}
		if _, ok := e.(int); ok {
			s = s.Items
			continue
		}
		key := e.(string)
		switch {
		case (i == 0 || s.XEmbeddedResource) && (key == "apiVersion" || key == "kind" || key == "metadata"):
			return true
		case hasProperty(s, key):
			prop := s.Properties[key]
			s = &prop
		case s.AdditionalProperties != nil && (s.AdditionalProperties.Bool || s.AdditionalProperties.Structural != nil):
			s = s.AdditionalProperties.Structural
			if s == nil {
				return true
			}
		default:
			return false
		}
	}
	return true
}

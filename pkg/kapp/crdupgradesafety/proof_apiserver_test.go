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
	"strconv"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/prooftest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
	return parseErrorPath(objects.ErrorField(e), obj)
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
		case objects.HasProperty(s, key):
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

// servedStorable reports whether an object stored under m can hold a value at
// p: the CRD keeps unknown fields, or every key is a property, a map value,
// or under a node that preserves unknown fields (or is the metadata of a
// resource).
func servedStorable(m *prooftest.ServedSchema, p dataPath) bool {
	if m.KeepsAll {
		return true
	}
	s := m.Structural
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
		case objects.HasProperty(s, key):
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

package crdupgradesafety

import (
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Paths of the object reader: the field a validation error is about,
// turned into the schema path findings use (^.spec.items[*].name); the
// grammar of schema paths is package schemapath's.

// errorField is the field a validation error is about. Most errors name it
// in Field; those of combinators (allOf, anyOf, oneOf, not) quote it at
// the start of their detail ("\"spec.x\" must validate all the schemas"),
// and the format checks of the 1.37 library name it at the end ("Checked
// value must be of type integer (default format) in spec.amount").
func errorField(e *field.Error) string {
	if e.Field == "" || e.Field == "<nil>" {
		if strings.HasPrefix(e.Detail, `"`) {
			if name, _, ok := strings.Cut(e.Detail[1:], `"`); ok {
				return name
			}
		}
		if strings.HasPrefix(e.Detail, "Checked value must be ") {
			if i := strings.LastIndex(e.Detail, " in "); i >= 0 {
				return e.Detail[i+len(" in "):]
			}
		}
		return ""
	}
	return e.Field
}

// schemaPathOf turns the field path of a validation error (spec.items[2].name,
// spec.labels[key], spec.labels.key) into a schema path (^.spec.items[*].name,
// ^.spec.labels{*}) by walking the schema s.
func schemaPathOf(s *structuralschema.Structural, fieldPath string) schemapath.Path {
	out, cur := schemapath.Root, s
	rest := strings.TrimPrefix(fieldPath, "<nil>")
	for rest != "" {
		var seg string
		bracket := false
		switch rest[0] {
		case '.':
			rest = rest[1:]
			continue
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				end = len(rest) - 1
			}
			seg, rest, bracket = rest[1:end], rest[min(end+1, len(rest)):], true
		default:
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			seg, rest = rest[:end], rest[end:]
		}
		switch {
		case (bracket || allDigits(seg)) && cur != nil && cur.Items != nil:
			out, cur = out.Items(), cur.Items
		case bracket && allDigits(seg):
			out, cur = out.Items(), nil
		case cur != nil && !bracket && hasProperty(cur, seg):
			p := cur.Properties[seg]
			out, cur = out.Child(seg), &p
		case cur != nil && cur.AdditionalProperties != nil:
			out, cur = out.Values(), cur.AdditionalProperties.Structural
		default:
			out, cur = out.Child(seg), nil
		}
	}
	return out
}

func hasProperty(s *structuralschema.Structural, name string) bool {
	_, ok := s.Properties[name]
	return ok
}

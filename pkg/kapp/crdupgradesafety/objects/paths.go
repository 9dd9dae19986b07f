package objects

import (
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Paths of the object reader: the field a validation error is about,
// turned into the schema path findings use (^.spec.items[*].name); the
// grammar of schema paths is package schemapath's.

// errorField is the field a validation error is about. Most errors name it
// in Field; those of combinators (allOf, anyOf, oneOf, not) quote it at
// the start of their detail ("\"spec.x\" must validate all the schemas"),
// and the numeric range checks of the 1.37 library (kube-openapi's
// IsValueValidAgainstRange: the value, or a minimum, maximum or multipleOf
// that does not fit the type and format) name it at the end, after the
// last " in " ("Checked value must be of type integer with format int32
// in spec.amount", "Minimum boundary value must be of type integer
// (default format) in spec.items[0].count"). This reads where the error
// is, not what it decides: the finding it joins comes from the schema.
func ErrorField(e *field.Error) string {
	if e.Field != "" && e.Field != "<nil>" {
		return e.Field
	}
	if strings.HasPrefix(e.Detail, `"`) {
		if name, _, ok := strings.Cut(e.Detail[1:], `"`); ok {
			return name
		}
	}
	for _, prefix := range rangeErrorPrefixes {
		if !strings.HasPrefix(e.Detail, prefix+" value must be of type ") {
			continue
		}
		if i := strings.LastIndex(e.Detail, " in "); i >= 0 {
			return e.Detail[i+len(" in "):]
		}
	}
	return ""
}

// rangeErrorPrefixes are the subjects of kube-openapi's range errors: the
// value itself and the three constraints checked against the type and
// format before they are applied.
var rangeErrorPrefixes = []string{"Checked", "Minimum boundary", "Maximum boundary", "MultipleOf"}

// schemaPathOf turns the field path of a validation error (spec.items[2].name,
// spec.labels[key], spec.labels.key) into a schema path (^.spec.items[*].name,
// ^.spec.labels{*}) by walking the schema s. kube-openapi joins a map key
// with a dot unescaped (spec.limits.a.b for the key "a.b"): where a key
// leads to a schema that can hold no field, the rest of the path is the
// key's.
func schemaPathOf(s *structuralschema.Structural, fieldPath string) schemapath.Path {
	out, cur := schemapath.Root, s
	rest := strings.TrimPrefix(fieldPath, "<nil>")
	afterKey := false
	for rest != "" {
		if afterKey && cur != nil && holdsNoField(cur) {
			break
		}
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
		case (bracket || finding.AllDigits(seg)) && cur != nil && cur.Items != nil:
			out, cur = out.Items(), cur.Items
		case bracket && finding.AllDigits(seg):
			out, cur = out.Items(), nil
		case cur != nil && !bracket && HasProperty(cur, seg):
			p := cur.Properties[seg]
			out, cur = out.Child(seg), &p
		case cur != nil && cur.AdditionalProperties != nil:
			out, cur = out.Values(), cur.AdditionalProperties.Structural
			afterKey = !bracket
			continue
		default:
			out, cur = out.Child(seg), nil
		}
		afterKey = false
	}
	return out
}

// holdsNoField: a schema whose values have no fields or items (a scalar).
func holdsNoField(s *structuralschema.Structural) bool {
	return len(s.Properties) == 0 && s.Items == nil && s.AdditionalProperties == nil &&
		!s.XPreserveUnknownFields && s.Type != "object" && s.Type != "array" && s.Type != ""
}

func HasProperty(s *structuralschema.Structural, name string) bool {
	_, ok := s.Properties[name]
	return ok
}

package crdupgradesafety

import (
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Paths of the object reader: the field a validation error is about,
// turned into the schema path findings use (^.spec.items[*].name), and the
// walk up from a field to the root.

// parentPath is the schema path above p ("" above the root "^").
func parentPath(p string) string {
	switch {
	case p == "^" || p == "":
		return ""
	case strings.HasSuffix(p, "[*]") || strings.HasSuffix(p, "{*}"):
		return p[:len(p)-3]
	}
	if i := strings.LastIndexByte(p, '.'); i > 0 {
		return p[:i]
	}
	return "^"
}

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
func schemaPathOf(s *structuralschema.Structural, fieldPath string) string {
	out, cur := "^", s
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
			out, cur = out+"[*]", cur.Items
		case bracket && allDigits(seg):
			out, cur = out+"[*]", nil
		case cur != nil && !bracket && hasProperty(cur, seg):
			p := cur.Properties[seg]
			out, cur = childPath(out, seg), &p
		case cur != nil && cur.AdditionalProperties != nil:
			out, cur = out+"{*}", cur.AdditionalProperties.Structural
		default:
			out, cur = childPath(out, seg), nil
		}
	}
	return out
}

func hasProperty(s *structuralschema.Structural, name string) bool {
	_, ok := s.Properties[name]
	return ok
}

// splitCombinators returns the part of a field path before its first
// combinator segment (.allOf[i], .anyOf[i], .oneOf[i], .not), and the path
// with every such segment removed.
func splitCombinators(field string) (base, stripped string) {
	base = field
	var b strings.Builder
	rest := field
	first := true
	for {
		i, n := nextCombinator(rest)
		if i < 0 {
			b.WriteString(rest)
			break
		}
		if first {
			base = field[:len(field)-len(rest)+i]
			first = false
		}
		b.WriteString(rest[:i])
		rest = rest[i+n:]
	}
	return base, b.String()
}

// nextCombinator finds the next combinator segment in s: its index and
// length, -1 when there is none.
func nextCombinator(s string) (int, int) {
	best, length := -1, 0
	for _, kw := range []string{".allOf[", ".anyOf[", ".oneOf["} {
		if i := strings.Index(s, kw); i >= 0 && (best < 0 || i < best) {
			j := strings.IndexByte(s[i:], ']')
			best, length = i, j+1
		}
	}
	if i := strings.Index(s, ".not"); i >= 0 && (best < 0 || i < best) && (len(s) == i+4 || strings.ContainsRune(".[{", rune(s[i+4]))) {
		best, length = i, 4
	}
	return best, length
}

package checks

import apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

// clearIgnoredKeywords clears the value keywords that the apiserver ignores
// for a schema's type, before any check reads them: changing them is never
// a finding. The apiserver's OpenAPI validator (k8s.io/kube-openapi's
// validate) runs each keyword only on values of the kind it constrains:
// minLength, maxLength and pattern on strings; minimum, maximum, their
// exclusive flags and multipleOf on numbers; minItems and maxItems on
// arrays; minProperties and maxProperties on objects. A schema with a
// type holds only values of that type (integer and number: numbers), so
// a keyword of another kind rejects nothing there; the apiserver accepts
// such a CRD as it is (TestIgnoredKeywordsAgreeWithAPIServer). An untyped
// schema (x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields)
// holds values of any kind: every keyword applies.
//
// A keyword is cleared on both sides when either side's type ignores it:
// where the old type ignores it, the stored values are not of the kind it
// constrains, so the new keyword cannot reject them; where the new type
// ignores it, it rejects nothing. A type change itself is checkType's.
//
// A format is cleared on each side where the apiserver drops it for that
// side's type (apiextensions' StripUnsupportedFormatsPostProcessorForVersion):
// on integer every format but int32 and int64, on number every format but
// float and double, on boolean, array and object every format. Formats on
// strings and untyped values are checkFormat's. uniqueItems is left to its
// check: the apiserver refuses uniqueItems: true on any type
// (apiserverRejects).
func clearIgnoredKeywords(n *node) {
	ot, nt := n.old.Type, n.new.Type
	if !HoldsKind(ot, "string") || !HoldsKind(nt, "string") {
		n.old.MinLength, n.new.MinLength = nil, nil
		n.old.MaxLength, n.new.MaxLength = nil, nil
		n.old.Pattern, n.new.Pattern = "", ""
	}
	if !HoldsKind(ot, "number") || !HoldsKind(nt, "number") {
		n.old.Minimum, n.new.Minimum = nil, nil
		n.old.Maximum, n.new.Maximum = nil, nil
		n.old.ExclusiveMinimum, n.new.ExclusiveMinimum = false, false
		n.old.ExclusiveMaximum, n.new.ExclusiveMaximum = false, false
		n.old.MultipleOf, n.new.MultipleOf = nil, nil
	}
	if !HoldsKind(ot, "array") || !HoldsKind(nt, "array") {
		n.old.MinItems, n.new.MinItems = nil, nil
		n.old.MaxItems, n.new.MaxItems = nil, nil
	}
	if !HoldsKind(ot, "object") || !HoldsKind(nt, "object") {
		n.old.MinProperties, n.new.MinProperties = nil, nil
		n.old.MaxProperties, n.new.MaxProperties = nil, nil
	}
	clearDroppedFormat(&n.old)
	clearDroppedFormat(&n.new)
}

// holdsKind reports whether a schema of type t can hold values of kind
// ("string", "number", "array" or "object"): an untyped schema holds any.
func HoldsKind(t, kind string) bool {
	switch t {
	case "":
		return true
	case "integer":
		return kind == "number"
	default:
		return t == kind
	}
}

// clearDroppedFormat clears the format of s where the apiserver drops it
// for s's type.
func clearDroppedFormat(s *apiextv1.JSONSchemaProps) {
	switch s.Type {
	case "", "string":
	case "integer":
		if s.Format != "int32" && s.Format != "int64" {
			s.Format = ""
		}
	case "number":
		if s.Format != "float" && s.Format != "double" {
			s.Format = ""
		}
	default:
		s.Format = ""
	}
}

package checks

import (
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// numberValidation is the type and format that Kubernetes 1.37's number
// validator checks a schema's bounds against (kube-openapi
// validate/schema.go, numberValidator): "integer" with int32, int64 or no
// format, "number" with float, double or no format; typ "" when it checks
// none (no type, or another).
type numberValidation struct{ typ, format string }

func numberValidationOf(s *apiextv1.JSONSchemaProps) numberValidation {
	switch s.Type {
	case "integer":
		if s.Format == "int32" || s.Format == "int64" {
			return numberValidation{s.Type, s.Format}
		}
		return numberValidation{typ: s.Type}
	case "number":
		if s.Format == "float" || s.Format == "double" {
			return numberValidation{s.Type, s.Format}
		}
		return numberValidation{typ: s.Type}
	}
	return numberValidation{}
}

func (v numberValidation) String() string {
	if v.format == "" {
		return v.typ
	}
	return v.typ + " with format " + v.format
}

// fits reports whether bound is a value of v's type and format, as the
// 1.37 number validator asks of each of minimum, maximum and multipleOf
// (validate.IsValueValidAgainstRange, the library's own): an integer
// bound must be an integer within int64 (int32 under int32), a number
// bound within float32's range under float.
func (v numberValidation) fits(bound float64) bool {
	return v.typ == "" || validate.IsValueValidAgainstRange(bound, v.typ, v.format, "", "") == nil
}

// integerConflict says why the number validator (every version) rejects
// every integer value (a JSON number without fraction, which the
// apiserver decodes as an int64) of a field with this bound, "" when it
// does not: it compares an int64 value with the bound converted to int64
// (kube-openapi MaximumNativeType, MultipleOfNativeType), so a multipleOf
// between 0 and 1 becomes 0, which no value is a multiple of, and a
// maximum beyond the int64 range does not convert (Go leaves the result
// to the platform: on amd64 the smallest int64, which every value
// exceeds). The same conversion moves a fractional maximum or minimum to
// the integer toward zero, which changes no verdict on an integer.
func integerConflict(id string, bound float64) string {
	switch {
	case id == config.CheckMultipleOf && bound > 0 && bound < 1:
		return "an integer value is checked against multipleOf " + finding.FormatFloat(bound) + " truncated to 0"
	case id == config.CheckMaximum && bound >= 1<<63:
		return "an integer value is checked against the maximum converted to int64, out of its range (on amd64: the smallest int64)"
	}
	return ""
}

// formatBound judges minimum, maximum and multipleOf (id) as the number
// validator of the target version checks them, for what no other check
// sees: a bound that makes the apiserver reject every value of the field,
// or every integer value, although it moved outward (raising a maximum is
// a relaxation for checkBounds).
//
//   - From Kubernetes 1.37 the validator checks each bound against the
//     field's type and numeric format, and a bound that is not a value of
//     them (a maximum of 3e9 on an int32, 1.5 on an integer, 4e38 on a
//     float) fails every value: the validator adds the bound's own error
//     to each ("Maximum boundary value must be of type integer with format
//     int32"). Before 1.37 it checks no bound's range.
//   - On every version, a bound that does not convert to int64
//     (integerConflict) fails every integer value: every value of an
//     integer field, and the integer values of a number field.
//
// It reports, under the bound's check ID, a new bound that fails where the
// old one did not (or there was none). TestFormatBoundsAgreeWithAPIServer
// proves it with the apiserver's validator at 1.35 and 1.37.
func formatBound(n *node, id string, enabled bool, old, new *float64) {
	nv := n.newNumber
	if !enabled || new == nil || nv.typ == "" {
		return
	}
	if n.run.kubeVersion.AtLeast(config.KubeVersionEnforcingNumericFormats) && !nv.fits(*new) {
		if old != nil && !n.oldNumber.fits(*old) {
			return // every value was already rejected
		}
		n.emit(finding.Draft{Field: n.path, Level: config.EnforcementStrict, Check: id,
			Fact: finding.Change{Kind: "outsideFormat", Old: finding.RenderPtr(old), New: finding.FormatFloat(*new) + " " + nv.String()},
			Message: fmt.Sprintf("%s %s -> %s: not a value of %s, so the apiserver rejects every value of the field",
				id, finding.RenderPtr(old), finding.FormatFloat(*new), nv),
			Since: config.KubeVersionEnforcingNumericFormats})
		return
	}
	why := integerConflict(id, *new)
	if why == "" || old != nil && n.oldNumber.typ != "" && integerConflict(id, *old) != "" {
		return
	}
	which := "every integer value of the field"
	if nv.typ == "integer" {
		which = "every value of the field"
	}
	n.emit(finding.Draft{Field: n.path, Level: config.EnforcementStrict, Check: id,
		Fact:    finding.Change{Kind: "integersRejected", Old: finding.RenderPtr(old), New: finding.FormatFloat(*new) + " " + nv.String()},
		Message: fmt.Sprintf("%s %s -> %s: the apiserver rejects %s (%s)", id, finding.RenderPtr(old), finding.FormatFloat(*new), which, why)})
}

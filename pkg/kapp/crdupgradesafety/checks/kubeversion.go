package checks

import (
	"math"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ValidatedAt returns crd as the apiserver of Kubernetes version v
// validates custom resources with it, for the object reader (whose
// validator is the library's, 1.37's): before 1.37, without the numeric
// formats (int32 and int64 on integers, float and double on numbers),
// whose ranges that validator does not check (see checkNumericFormat), and
// with the bounds of integers converted to int64 as that validator
// compares values with them (see formatBound). It returns crd itself where
// nothing differs, and a copy otherwise.
func ValidatedAt(crd *apiextv1.CustomResourceDefinition, v config.KubeVersion) *apiextv1.CustomResourceDefinition {
	if crd == nil || v.AtLeast(config.KubeVersionEnforcingNumericFormats) {
		return crd
	}
	found := false
	for i := range crd.Spec.Versions {
		if s := VersionSchema(&crd.Spec.Versions[i]); s != nil && numericFormats(s, false) {
			found = true
		}
	}
	if !found {
		return crd
	}
	out := crd.DeepCopy()
	for i := range out.Spec.Versions {
		if s := VersionSchema(&out.Spec.Versions[i]); s != nil {
			numericFormats(s, true)
		}
	}
	return out
}

// numericFormats reports whether s has a schema with a numeric format on
// its type, or an integer bound that is not an integer, and with strip
// removes every such format and converts every such bound (s must be a
// copy then).
func numericFormats(s *apiextv1.JSONSchemaProps, strip bool) bool {
	found := false
	if s.Type == "integer" && (s.Format == "int32" || s.Format == "int64") ||
		s.Type == "number" && (s.Format == "float" || s.Format == "double") {
		if !strip {
			return true
		}
		s.Format, found = "", true
	}
	// The bounds of an integer that are not integers (1.5, 1e19): the
	// 1.37 validator rejects every value for them (formatBound), an older
	// one compares each value with the bound converted to int64, which the
	// converted bound gives at 1.37 too.
	if s.Type == "integer" {
		for _, b := range []**float64{&s.Minimum, &s.Maximum, &s.MultipleOf} {
			if *b != nil && !(numberValidation{typ: "integer"}).fits(**b) {
				if !strip {
					return true
				}
				converted := int64Bound(**b)
				*b, found = &converted, true
			}
		}
	}
	walk := func(c *apiextv1.JSONSchemaProps) {
		if c != nil && numericFormats(c, strip) {
			found = true
		}
	}
	for k, p := range s.Properties {
		walk(&p)
		if strip {
			s.Properties[k] = p
		}
	}
	if s.Items != nil {
		walk(s.Items.Schema)
		for i := range s.Items.JSONSchemas {
			walk(&s.Items.JSONSchemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		walk(s.AdditionalProperties.Schema)
	}
	for _, list := range [][]apiextv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			walk(&list[i])
		}
	}
	walk(s.Not)
	return found
}

// int64Bound is bound converted to int64 as an older validator compares an
// integer value with it (Go's conversion: toward zero, and out of range as
// the platform has it), written as the nearest bound toward zero that the
// 1.37 validator takes as an integer (-2^63 is written
// -9223372036854776000, beyond int64: the next one in is taken). It
// changes no verdict on a value short of the int64 extremes.
func int64Bound(bound float64) float64 {
	c := float64(int64(bound))
	for !(numberValidation{typ: "integer"}).fits(c) {
		c = math.Nextafter(c, 0)
	}
	return c
}

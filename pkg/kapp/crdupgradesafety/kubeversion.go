package crdupgradesafety

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ValidatedAt returns crd as the apiserver of Kubernetes version v
// validates custom resources with it, for the object reader (whose
// validator is the library's, 1.37's): before 1.37, without the numeric
// formats (int32 and int64 on integers, float and double on numbers),
// whose ranges that validator does not check (see checkNumericFormat). It
// returns crd itself where nothing differs, and a copy otherwise.
func ValidatedAt(crd *apiextv1.CustomResourceDefinition, v config.KubeVersion) *apiextv1.CustomResourceDefinition {
	if crd == nil || v.AtLeast(config.KubeVersionEnforcingNumericFormats) {
		return crd
	}
	found := false
	for i := range crd.Spec.Versions {
		if s := versionSchema(&crd.Spec.Versions[i]); s != nil && numericFormats(s, false) {
			found = true
		}
	}
	if !found {
		return crd
	}
	out := crd.DeepCopy()
	for i := range out.Spec.Versions {
		if s := versionSchema(&out.Spec.Versions[i]); s != nil {
			numericFormats(s, true)
		}
	}
	return out
}

// numericFormats reports whether s has a schema with a numeric format on
// its type, and with strip removes every one (s must be a copy then).
func numericFormats(s *apiextv1.JSONSchemaProps, strip bool) bool {
	found := false
	if s.Type == "integer" && (s.Format == "int32" || s.Format == "int64") ||
		s.Type == "number" && (s.Format == "float" || s.Format == "double") {
		if !strip {
			return true
		}
		s.Format, found = "", true
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

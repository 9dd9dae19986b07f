package conversion

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// schemas holds the structural schema of each version of a CRD: what the
// apiserver prunes and defaults an object by at that version.
type schemas struct {
	preserveUnknown bool
	byVersion       map[string]*structuralschema.Structural
}

func newSchemas(crd *apiextv1.CustomResourceDefinition) (*schemas, error) {
	s := &schemas{preserveUnknown: crd.Spec.PreserveUnknownFields, byVersion: map[string]*structuralschema.Structural{}}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		internal := &apiextensions.JSONSchemaProps{}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				return nil, fmt.Errorf("crd %s version %s: converting schema: %w", crd.Name, v.Name, err)
			}
		}
		st, err := structuralschema.NewStructural(internal)
		if err != nil {
			return nil, fmt.Errorf("crd %s version %s: structural schema: %w", crd.Name, v.Name, err)
		}
		s.byVersion[v.Name] = st
	}
	return s, nil
}

// normalize prunes and defaults u in place by the schema of version, as
// the apiserver does to an object it decodes at that version (the
// schemaCoercingConverter's pruning, then the unstructuredDefaulter):
// what pruning drops anyway is no loss of a conversion.
func (s *schemas) normalize(u *unstructured.Unstructured, version string) {
	st := s.byVersion[version]
	if st == nil {
		return
	}
	if !s.preserveUnknown {
		pruning.Prune(u.Object, st, true)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, st)
	}
	structuraldefaulting.Default(u.Object, st)
}

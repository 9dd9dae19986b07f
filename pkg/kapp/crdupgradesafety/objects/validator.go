package objects

import (
	"context"
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// versionValidator validates custom resources of one version of a CRD as
// the apiserver's custom resource strategy validates a create: the
// OpenAPI schema, metadata and embedded resources, list sets and maps,
// then (unless those found an error that blocks them) the CEL rules. The
// strategy's checks of standard metadata are left out: an update of the
// CRD cannot change them (a scope change is a finding of its own).
type versionValidator struct {
	openAPI    validation.SchemaValidator
	structural *schema.Structural // every property; the CEL rules the objects reach
	cel        *cel.Validator
}

// newVersionValidator builds the validators of one version of the new CRD
// for the objects objs of that version, nil when the CRD lacks the version
// or it has no schema. With prune, the parts of the schema that no object
// of objs reaches are left out first (see reached_schema.go): the
// validators then serve only those objects.
func newVersionValidator(crd *apiextv1.CustomResourceDefinition, version string, objs []any, prune bool) (*versionValidator, error) {
	s := checks.VersionSchema(checks.VersionsByName(crd)[version])
	if s == nil {
		return nil, nil
	}
	internal, err := internalSchemaOf(s)
	if err != nil {
		return nil, err
	}
	// The structural schema, for the CEL rules, keeps every property: a
	// rule may name fields that no object has.
	structural, structuralErr := schema.NewStructural(internal)
	if prune {
		pruneAbsentProperties(internal, objs)
	}
	openAPI, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("building schema validator: %w", err)
	}
	v := &versionValidator{openAPI: openAPI}
	if structuralErr == nil {
		if prune {
			dropUnreachedRules(structural, objs) // rules only: every property stays
		}
		v.structural = structural
		v.cel = cel.NewValidator(structural, true, celconfig.PerCallLimit)
		if prune {
			useReachedSchemas(v.cel, reachedSchema(structural, objs))
		}
	}
	return v, nil
}

func (v *versionValidator) validate(obj map[string]any) field.ErrorList {
	errs := validation.ValidateCustomResource(nil, obj, v.openAPI)
	if v.structural != nil {
		errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, obj, v.structural, false)...)
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	}
	if v.cel != nil && !blocksCEL(errs) {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// blocksCEL tells whether errors keep the apiserver from running the CEL
// rules (its custom resource strategy's hasBlockingErr).
func blocksCEL(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

func objectName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		return ns + "/" + name
	}
	return name
}

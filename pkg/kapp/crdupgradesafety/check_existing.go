package crdupgradesafety

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// ValidateExisting validates existing custom resources of a CRD against the
// new CRD's schema (OpenAPI and CEL rules) of the version each object
// carries in its apiVersion, and returns an existingResources finding per
// invalid object. Objects whose version the new CRD lacks are skipped (the
// storedVersionRemoval/servedVersionRemoval checks cover that).
// This is the existingResources live check.
func ValidateExisting(newCRD *apiextv1.CustomResourceDefinition, objs []map[string]any, cfg *config.Settings) ([]Finding, error) {
	p := newPolicy(cfg, newCRD.Name)
	if !p.cfg.Checks.CRD.ExistingResources.Enabled || len(objs) == 0 {
		return nil, nil
	}
	// The objects of each version, for the validators built for them.
	byVersion := map[string][]any{}
	for _, obj := range objs {
		version := objectVersion(obj)
		byVersion[version] = append(byVersion[version], obj)
	}
	for _, version := range slices.Sorted(maps.Keys(byVersion)) {
		vals := byVersion[version]
		v, err := newVersionValidator(newCRD, version, vals, true)
		if err != nil {
			return nil, fmt.Errorf("crd %s version %s: %w", newCRD.Name, version, err)
		}
		if v == nil {
			continue // version gone: storedVersionRemoval/servedVersionRemoval report it
		}
		for _, val := range vals {
			obj := val.(map[string]any)
			if errs := v.validate(obj); len(errs) > 0 {
				p.crdLevel(config.EnforcementStrict, version, config.CheckExistingResources,
					"existing %s %s would be invalid: %s", newCRD.Spec.Names.Kind, objectName(obj), summarize(errs))
			}
		}
	}
	SortFindings(p.findings)
	return p.findings, nil
}

type versionValidator struct {
	openAPI    validation.SchemaValidator
	structural *schema.Structural
	cel        *cel.Validator
}

// newVersionValidator builds the validators of one version of the new CRD
// for the objects objs of that version, nil when the CRD lacks the version
// or it has no schema. With prune, the parts of the schema that no object
// of objs reaches are left out first (see check_existing_schema.go): the
// validators then serve only those objects.
func newVersionValidator(crd *apiextv1.CustomResourceDefinition, version string, objs []any, prune bool) (*versionValidator, error) {
	s := versionSchema(versionsByName(crd)[version])
	if s == nil {
		return nil, nil
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		return nil, fmt.Errorf("converting schema: %w", err)
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
			dropUnreachedRules(structural, objs)
		}
		v.structural = structural
		v.cel = cel.NewValidator(structural, true, celconfig.PerCallLimit)
	}
	return v, nil
}

func (v *versionValidator) validate(obj map[string]any) field.ErrorList {
	errs := validation.ValidateCustomResource(nil, obj, v.openAPI)
	if v.cel != nil {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

func objectVersion(obj map[string]any) string {
	apiVersion, _ := obj["apiVersion"].(string)
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		return apiVersion[i+1:]
	}
	return apiVersion
}

func objectName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		return ns + "/" + name
	}
	return name
}

// summarize renders validation errors sorted, the first few in full.
func summarize(errs field.ErrorList) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	sort.Strings(msgs)
	const max = 3
	if len(msgs) > max {
		return strings.Join(msgs[:max], "; ") + fmt.Sprintf("; and %d more", len(msgs)-max)
	}
	return strings.Join(msgs, "; ")
}

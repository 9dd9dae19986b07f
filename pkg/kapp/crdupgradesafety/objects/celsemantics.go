package objects

import (
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/celcompat"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// celSemantics is the CEL value semantics with which the apiserver of
// Kubernetes v evaluates the rules of a CRD on its objects: the linked
// library's from 1.37, the older ones below (kubernetes#140293 changed ==
// and + on set and map lists; see package celcompat). Like the numeric
// formats (ValidatedAt), a verdict on stored objects is the verdict of the
// cluster that holds them.
func celSemantics(v config.KubeVersion) celcompat.Semantics {
	if v.AtLeast(config.KubeVersionCELListSemantics) {
		return celcompat.Linked
	}
	return celcompat.Before137
}

// newVersionValidatorAt is newVersionValidator(crd, version, objs, true)
// evaluating the CEL rules with sem.
func newVersionValidatorAt(crd *apiextv1.CustomResourceDefinition, version string, objs []any, sem celcompat.Semantics) (*versionValidator, error) {
	v, err := newVersionValidator(crd, version, objs, true)
	if err != nil || v == nil {
		return v, err
	}
	if err := celcompat.Use(v.cel, sem); err != nil {
		return nil, fmt.Errorf("crd %s version %s: CEL rules at %s: %w", crd.Name, version, sem, err)
	}
	return v, nil
}

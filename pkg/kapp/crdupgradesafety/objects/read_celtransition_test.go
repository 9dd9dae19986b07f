package objects

import (
	"context"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// resourceStrategy is the validation of the apiserver's custom resource
// strategy.
type resourceStrategy interface {
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// widgetStrategy is the apiserver's custom resource strategy (the
// registry's create and update validation: OpenAPI schema with
// ratcheting, metadata, list sets and maps, CEL rules) for version v1 of
// crd.
func widgetStrategy(t *testing.T, crd *apiextv1.CustomResourceDefinition) resourceStrategy {
	t.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	require.NoError(t, apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil))
	s, err := structuralschema.NewStructural(internal)
	require.NoError(t, err)
	v, _, err := validation.NewSchemaValidator(internal)
	require.NoError(t, err)
	gvk := runtimeschema.GroupVersionKind{Group: crd.Spec.Group, Version: "v1", Kind: crd.Spec.Names.Kind}
	return customresource.NewStrategy(unstructuredscheme.NewUnstructuredObjectTyper(), true, gvk, v, v, s, nil, nil, nil)
}

// TestTransitionRulesAreNotRatcheted shows with the apiserver's custom
// resource strategy what docs/checks.md says about CEL transition rules
// (rules that use oldSelf): validation ratcheting does not cover them.
// An object whose unchanged value fails a transition rule added by the
// update is accepted on create (transition rules do not run without an old
// object), but every update that leaves that value as it is is refused:
// the same object as old and new, and an update of its labels only. Only
// an update that changes the value so that the rule holds passes. A rule
// without oldSelf that the same object fails is the other way round:
// refused on create, ratcheted on an update that leaves the value alone.
func TestTransitionRulesAreNotRatcheted(t *testing.T) {
	const transition = `{type: object, properties: {mode: {type: string}},
	  x-kubernetes-validations: [{rule: "self.mode != 'Legacy' || oldSelf.mode != 'Legacy'", message: "Legacy is no longer allowed"}]}`
	const plain = `{type: object, properties: {mode: {type: string}},
	  x-kubernetes-validations: [{rule: "self.mode != 'Legacy'", message: "Legacy is no longer allowed"}]}`
	ctx := context.Background()
	object := func(mode string, labels map[string]any) *unstructured.Unstructured {
		o := enginetest.Widget("v1", "default", "w", map[string]any{"mode": mode})
		o["metadata"].(map[string]any)["resourceVersion"] = "1"
		if labels != nil {
			o["metadata"].(map[string]any)["labels"] = labels
		}
		return &unstructured.Unstructured{Object: o}
	}
	stored := object("Legacy", nil)
	relabeled := object("Legacy", map[string]any{"team": "a"})
	migrated := object("Modern", nil)
	ruleErrors := func(errs field.ErrorList) []string {
		var out []string
		for _, e := range errs {
			out = append(out, e.Field+": "+e.Detail)
		}
		return out
	}

	t.Run("transition rule", func(t *testing.T) {
		s := widgetStrategy(t, enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: transition}))
		require.Empty(t, s.Validate(ctx, stored), "a create does not run transition rules")
		require.Equal(t, []string{"spec: Legacy is no longer allowed"}, ruleErrors(s.ValidateUpdate(ctx, stored, stored)),
			"an update that leaves the object as it is: not ratcheted")
		require.Equal(t, []string{"spec: Legacy is no longer allowed"}, ruleErrors(s.ValidateUpdate(ctx, relabeled, stored)),
			"an update of the labels only: not ratcheted")
		require.Empty(t, s.ValidateUpdate(ctx, migrated, stored), "an update that makes the rule hold passes")
	})
	t.Run("rule without oldSelf", func(t *testing.T) {
		s := widgetStrategy(t, enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: plain}))
		require.Equal(t, []string{"spec: Legacy is no longer allowed"}, ruleErrors(s.Validate(ctx, stored)), "a create runs the rule")
		require.Empty(t, s.ValidateUpdate(ctx, stored, stored), "an update that leaves the object as it is: ratcheted")
		require.Empty(t, s.ValidateUpdate(ctx, relabeled, stored), "an update of the labels only: ratcheted")
	})
}

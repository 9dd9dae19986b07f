package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestCRDAdmissionWebhook: the configuration that registers
// crd-upgrade-safety's webhook for CRD updates, by the webhook's name and
// its rules; "" when none does.
func TestCRDAdmissionWebhook(t *testing.T) {
	vwc := func(name, webhook string, ops, groups, resources []any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
			"metadata": map[string]any{"name": name},
			"webhooks": []any{map[string]any{"name": webhook, "rules": []any{map[string]any{
				"operations": ops, "apiGroups": groups, "apiVersions": []any{"v1"}, "resources": resources}}}},
		}}
	}
	crds := []any{"customresourcedefinitions"}
	apiext := []any{"apiextensions.k8s.io"}
	cases := []struct {
		name string
		objs []runtime.Object
		want string
	}{
		{name: "none", want: ""},
		{name: "ours", want: "crd-upgrade-safety",
			objs: []runtime.Object{vwc("crd-upgrade-safety", AdmissionWebhookName, []any{"UPDATE", "DELETE"}, apiext, crds)}},
		{name: "wildcards", want: "all",
			objs: []runtime.Object{vwc("all", AdmissionWebhookName, []any{"*"}, []any{"*"}, []any{"*"})}},
		{name: "another webhook for CRDs", want: "",
			objs: []runtime.Object{vwc("other", "validate.example.com", []any{"UPDATE"}, apiext, crds)}},
		{name: "ours, deletes only", want: "",
			objs: []runtime.Object{vwc("deletes", AdmissionWebhookName, []any{"DELETE"}, apiext, crds)}},
		{name: "two: the first by name", want: "a",
			objs: []runtime.Object{vwc("b", AdmissionWebhookName, []any{"UPDATE"}, apiext, crds), vwc("a", AdmissionWebhookName, []any{"UPDATE"}, apiext, crds)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{validatingWebhookConfigurationGVR: "ValidatingWebhookConfigurationList"}, tc.objs...)
			got, err := (&Client{Client: dyn}).CRDAdmissionWebhook(context.Background())
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

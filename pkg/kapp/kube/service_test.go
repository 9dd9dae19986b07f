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

// TestServiceSelector: the selector of an existing Service, and found
// false (no error) for a Service that does not exist.
func TestServiceSelector(t *testing.T) {
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "gizmo-webhook", "namespace": "gizmo-system"},
		"spec":     map[string]any{"selector": map[string]any{"app.kubernetes.io/name": "gizmo-operator"}},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{serviceGVR: "ServiceList"}, svc)
	c := &Client{Client: dyn}

	sel, found, err := c.ServiceSelector(context.Background(), "gizmo-system", "gizmo-webhook")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, map[string]string{"app.kubernetes.io/name": "gizmo-operator"}, sel)

	_, found, err = c.ServiceSelector(context.Background(), "gizmo-system", "missing")
	require.NoError(t, err)
	require.False(t, found)
}

package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var serviceGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}

// ServiceSelector reads the selector of the Service namespace/name (the
// one a CRD's conversion webhook names): found is false when there is no
// such Service.
func (c *Client) ServiceSelector(ctx context.Context, namespace, name string) (selector map[string]string, found bool, err error) {
	svc, err := c.Client.Resource(serviceGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading service %s/%s: %w", namespace, name, err)
	}
	selector, _, err = unstructured.NestedStringMap(svc.Object, "spec", "selector")
	if err != nil {
		return nil, false, fmt.Errorf("reading service %s/%s: spec.selector: %w", namespace, name, err)
	}
	return selector, true, nil
}

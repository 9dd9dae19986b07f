package kube

import (
	"context"
	"fmt"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Reads and writes of single objects, for the storage migration: the live
// CRD and its status, custom resources one by one, StorageVersionMigrations.

// GetCRD returns the live CRD (a NotFound API error when there is none).
func (c *Client) GetCRD(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return c.Client.Resource(CRDResource).Get(ctx, name, metav1.GetOptions{})
}

// UpdateCRDStatus writes crd through its status subresource; crd's
// resourceVersion turns a concurrent change into a Conflict error.
func (c *Client) UpdateCRDStatus(ctx context.Context, crd *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.Client.Resource(CRDResource).UpdateStatus(ctx, crd, metav1.UpdateOptions{})
}

// Objects returns a client for the objects of gvr in all namespaces.
func (c *Client) Objects(gvr schema.GroupVersionResource) Objects {
	return Objects{c.Client.Resource(gvr)}
}

// StorageVersionMigrations returns a client for StorageVersionMigrations
// (cluster-scoped).
func (c *Client) StorageVersionMigrations() StorageVersionMigrations {
	return StorageVersionMigrations{c.Client.Resource(StorageVersionMigrationResource)}
}

// Objects reads and writes the objects of one resource and version.
type Objects struct {
	ri dynamic.NamespaceableResourceInterface
}

// List lists the objects in all namespaces.
func (o Objects) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return o.ri.List(ctx, opts)
}

// Get reads one object (namespace "" for a cluster-scoped one).
func (o Objects) Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return o.ri.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Update writes obj, with its resourceVersion.
func (o Objects) Update(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return o.ri.Namespace(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{})
}

// StorageVersionMigrations creates, reads and deletes
// StorageVersionMigrations.
type StorageVersionMigrations struct {
	ri dynamic.NamespaceableResourceInterface
}

func (m StorageVersionMigrations) Create(ctx context.Context, svm *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return m.ri.Create(ctx, svm, metav1.CreateOptions{})
}

func (m StorageVersionMigrations) Get(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return m.ri.Get(ctx, name, metav1.GetOptions{})
}

func (m StorageVersionMigrations) Delete(ctx context.Context, name string) error {
	return m.ri.Delete(ctx, name, metav1.DeleteOptions{})
}

// ListStorageVersionMigrations lists every StorageVersionMigration (few:
// one per migration run, deleted by their creators).
func (c *Client) ListStorageVersionMigrations(ctx context.Context) ([]unstructured.Unstructured, error) {
	list, err := c.Client.Resource(StorageVersionMigrationResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, forbidden(err, StorageVersionMigrationResource, "list")
	}
	return list.Items, nil
}

// UpdateCRD writes crd (its metadata: the migration's record); crd's
// resourceVersion turns a concurrent change into a Conflict error.
func (c *Client) UpdateCRD(ctx context.Context, crd *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.Client.Resource(CRDResource).Update(ctx, crd, metav1.UpdateOptions{})
}

// ListCRDs lists every CRD of the cluster, in pages (`kapp tools
// crd-upgrade-safety-webhook rbac`).
func (c *Client) ListCRDs(ctx context.Context) ([]apiextv1.CustomResourceDefinition, error) {
	var crds []apiextv1.CustomResourceDefinition
	opts := metav1.ListOptions{Limit: 100}
	for {
		list, err := c.Client.Resource(CRDResource).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing CRDs: %w", forbidden(err, CRDResource, "list"))
		}
		for i := range list.Items {
			var crd apiextv1.CustomResourceDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &crd); err != nil {
				return nil, fmt.Errorf("decoding CRD %s: %w", list.Items[i].GetName(), err)
			}
			crds = append(crds, crd)
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return crds, nil
		}
	}
}

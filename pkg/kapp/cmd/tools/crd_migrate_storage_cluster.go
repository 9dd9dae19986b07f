package tools

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// migrationCluster is what `kapp tools crd-migrate-storage` needs from the
// cluster. dynamicMigrationCluster implements it with kapp's clients; unit
// tests supply their own.
type migrationCluster interface {
	// GetCRD returns the live CRD (a NotFound API error when there is none).
	GetCRD(ctx context.Context, name string) (*unstructured.Unstructured, error)
	// UpdateCRDStatus writes crd through its status subresource; crd's
	// resourceVersion turns a concurrent change into a Conflict error.
	UpdateCRDStatus(ctx context.Context, crd *unstructured.Unstructured) (*unstructured.Unstructured, error)
	// StorageVersionHash returns the storageVersionHash that API discovery
	// reports for gvr ("" when the server reports none).
	StorageVersionHash(ctx context.Context, gvr schema.GroupVersionResource) (string, error)
	// CountObjects returns how many custom resources crd has (all namespaces).
	CountObjects(ctx context.Context, crd *apiextv1.CustomResourceDefinition) (int, error)
	// Objects returns a client for the custom resources of gvr in all namespaces.
	Objects(gvr schema.GroupVersionResource) objectClient
	// ServesStorageMigration reports whether the cluster serves
	// storagemigration.k8s.io/v1 StorageVersionMigrations (Kubernetes 1.37
	// and later, where kube-controller-manager migrates them).
	ServesStorageMigration(ctx context.Context) (bool, error)
	// Migrations reads and writes StorageVersionMigrations.
	Migrations() migrationClient
}

// migrationClient creates, reads and deletes StorageVersionMigrations
// (cluster-scoped).
type migrationClient interface {
	Create(ctx context.Context, svm *unstructured.Unstructured) (*unstructured.Unstructured, error)
	Get(ctx context.Context, name string) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, name string) error
}

// objectClient reads and writes the custom resources of one resource and version.
type objectClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	Update(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

var (
	crdResource = apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	// svmResource is the in-tree storage version migrator's API, GA in 1.37.
	svmResource = schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"}
)

// dynamicMigrationCluster implements migrationCluster with kapp's dynamic
// client and a discovery client.
type dynamicMigrationCluster struct {
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
}

func migrationClusterFromDeps(depsFactory cmdcore.DepsFactory) (migrationCluster, error) {
	dyn, err := depsFactory.DynamicClient(cmdcore.DynamicClientOpts{})
	if err != nil {
		return nil, fmt.Errorf("building dynamic client: %w", err)
	}
	core, err := depsFactory.CoreClient()
	if err != nil {
		return nil, fmt.Errorf("building discovery client: %w", err)
	}
	return &dynamicMigrationCluster{dyn: dyn, disc: core.Discovery()}, nil
}

func (c *dynamicMigrationCluster) GetCRD(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return c.dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
}

func (c *dynamicMigrationCluster) UpdateCRDStatus(ctx context.Context, crd *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.dyn.Resource(crdResource).UpdateStatus(ctx, crd, metav1.UpdateOptions{})
}

func (c *dynamicMigrationCluster) StorageVersionHash(_ context.Context, gvr schema.GroupVersionResource) (string, error) {
	list, err := c.disc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return "", err
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return r.StorageVersionHash, nil
		}
	}
	return "", fmt.Errorf("API discovery of %s lists no resource %s", gvr.GroupVersion(), gvr.Resource)
}

func (c *dynamicMigrationCluster) CountObjects(ctx context.Context, crd *apiextv1.CustomResourceDefinition) (int, error) {
	return (&evaluation.DynamicCluster{Client: c.dyn}).CountCustomResources(ctx, crd)
}

func (c *dynamicMigrationCluster) Objects(gvr schema.GroupVersionResource) objectClient {
	return dynamicObjects{c.dyn.Resource(gvr)}
}

func (c *dynamicMigrationCluster) ServesStorageMigration(_ context.Context) (bool, error) {
	list, err := c.disc.ServerResourcesForGroupVersion(svmResource.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("API discovery of %s: %w", svmResource.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == svmResource.Resource {
			return true, nil
		}
	}
	return false, nil
}

func (c *dynamicMigrationCluster) Migrations() migrationClient {
	return dynamicMigrations{c.dyn.Resource(svmResource)}
}

type dynamicMigrations struct {
	ri dynamic.NamespaceableResourceInterface
}

func (m dynamicMigrations) Create(ctx context.Context, svm *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return m.ri.Create(ctx, svm, metav1.CreateOptions{})
}

func (m dynamicMigrations) Get(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return m.ri.Get(ctx, name, metav1.GetOptions{})
}

func (m dynamicMigrations) Delete(ctx context.Context, name string) error {
	return m.ri.Delete(ctx, name, metav1.DeleteOptions{})
}

type dynamicObjects struct {
	ri dynamic.NamespaceableResourceInterface
}

func (o dynamicObjects) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return o.ri.List(ctx, opts) // all namespaces
}

func (o dynamicObjects) Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return o.ri.Namespace(namespace).Get(ctx, name, metav1.GetOptions{}) // "" for cluster-scoped
}

func (o dynamicObjects) Update(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return o.ri.Namespace(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{})
}

// storageVersionHash is the storageVersionHash API discovery reports for a
// resource stored as group/version/kind: the first 8 bytes of the SHA-256
// of "group/version/kind", base64-encoded. Computed here as the apiserver's
// discovery.StorageVersionHash does (a test compares them) rather than
// imported: that package would link a good part of the apiserver.
func storageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

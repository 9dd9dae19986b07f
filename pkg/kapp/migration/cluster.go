package migration

import (
	"context"
	"crypto/sha256"
	"encoding/base64"

	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic"
)

// Cluster is what the migration needs from the cluster. FromClient
// implements it with the kube client; unit tests supply their own.
type Cluster interface {
	// GetCRD returns the live CRD (a NotFound API error when there is none).
	GetCRD(ctx context.Context, name string) (*unstructured.Unstructured, error)
	// UpdateCRDStatus writes crd through its status subresource; crd's
	// resourceVersion turns a concurrent change into a Conflict error.
	UpdateCRDStatus(ctx context.Context, crd *unstructured.Unstructured) (*unstructured.Unstructured, error)
	// UpdateCRD writes crd (the migration changes only its annotations:
	// the record); crd's resourceVersion turns a concurrent change into a
	// Conflict error.
	UpdateCRD(ctx context.Context, crd *unstructured.Unstructured) (*unstructured.Unstructured, error)
	// StorageVersionHash returns the storageVersionHash that API discovery
	// reports for gvr ("" when the server reports none).
	StorageVersionHash(ctx context.Context, gvr schema.GroupVersionResource) (string, error)
	// CountCustomResources returns how many custom resources crd has (all namespaces).
	CountCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition) (int, error)
	// Objects returns a client for the custom resources of gvr in all namespaces.
	Objects(gvr schema.GroupVersionResource) ObjectClient
	// ServesStorageMigration reports whether the cluster serves
	// storagemigration.k8s.io/v1 StorageVersionMigrations (Kubernetes 1.37
	// and later, where kube-controller-manager migrates them).
	ServesStorageMigration(ctx context.Context) (bool, error)
	// ServerVersion returns the apiserver's version (GET /version): the
	// migrator of some versions may not be used (trimguard.go).
	ServerVersion(ctx context.Context) (*version.Info, error)
	// Migrations reads and writes StorageVersionMigrations.
	Migrations() MigrationClient
	// ServiceProxy reaches a conversion webhook behind a Service through
	// the apiserver's service proxy (kube.Client.ServiceProxy): the probe
	// before any object is rewritten.
	ServiceProxy(ctx context.Context, namespace, name string, port int32, path string) (kube.Poster, error)
}

// MigrationClient creates, reads and deletes StorageVersionMigrations
// (cluster-scoped).
type MigrationClient interface {
	Create(ctx context.Context, svm *unstructured.Unstructured) (*unstructured.Unstructured, error)
	Get(ctx context.Context, name string) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, name string) error
}

// ObjectClient reads and writes the custom resources of one resource and version.
type ObjectClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	Update(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// svmResource is the in-tree storage version migrator's API, GA in 1.37.
var svmResource = kube.StorageVersionMigrationResource

// FromClient is the Cluster of a kube client.
func FromClient(c *kube.Client) Cluster { return kubeCluster{c} }

// kubeCluster implements Cluster with the kube client.
type kubeCluster struct{ *kube.Client }

func (c kubeCluster) Objects(gvr schema.GroupVersionResource) ObjectClient {
	return objectClient{Objects: c.Client.Objects(gvr), ri: c.Client.Client.Resource(gvr)}
}

// objectClient writes with the field manager of the migration, so that a
// write that changes fields (none should) is told apart from the owners'.
type objectClient struct {
	kube.Objects
	ri dynamic.NamespaceableResourceInterface
}

func (o objectClient) Update(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return o.ri.Namespace(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
}

// FieldManager is the field manager of the migration's object writes.
const FieldManager = managedBy

// UpdateCRDStatus writes with the field manager of the migration: the
// owner of status.storedVersions then says who trimmed it
// (storedversions.UnprovenTrim).
func (c kubeCluster) UpdateCRDStatus(ctx context.Context, crd *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.Client.Client.Resource(kube.CRDResource).UpdateStatus(ctx, crd, metav1.UpdateOptions{FieldManager: FieldManager})
}

// UpdateCRD writes the record with the field manager of the migration.
func (c kubeCluster) UpdateCRD(ctx context.Context, crd *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.Client.Client.Resource(kube.CRDResource).Update(ctx, crd, metav1.UpdateOptions{FieldManager: FieldManager})
}

func (c kubeCluster) Migrations() MigrationClient {
	return c.StorageVersionMigrations()
}

// StorageVersionHash is the storageVersionHash API discovery reports for a
// resource stored as group/version/kind: the first 8 bytes of the SHA-256
// of "group/version/kind", base64-encoded. Computed here as the apiserver's
// discovery.StorageVersionHash does (a test compares them) rather than
// imported: that package would link a good part of the apiserver.
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

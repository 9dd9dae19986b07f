package evaluation

import (
	"context"

	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/version"
)

// Cluster is what the live checks need from the cluster. Production code
// uses a *kube.Client (built by the front-ends from kapp's clients); tests
// supply their own implementation.
type Cluster interface {
	// GetCRDs returns the live CRDs of the given names. A name without a
	// CRD on the cluster is absent from the map (a new CRD).
	GetCRDs(ctx context.Context, names []string) (map[string]*apiextv1.CustomResourceDefinition, error)
	// ListCustomResources calls fn with each page of the custom resources
	// (in all namespaces) of crd, read at version.
	ListCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition, version string,
		fn func(objs []map[string]any) error) error
	// CountCustomResources returns how many custom resources of crd exist
	// (in all namespaces).
	CountCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition) (int, error)
	// DryRun sends one CRD request as a server-side dry run (dryRun=All):
	// the apiserver validates and admits it (webhooks and policies
	// included) and persists nothing. obj is the CRD to create or update,
	// or the one to delete. A nil error means the apiserver would accept it;
	// warnings are the apiserver's warnings on the accepted request.
	DryRun(ctx context.Context, verb Verb, obj *unstructured.Unstructured) (warnings []string, err error)
	// ServerVersion returns the apiserver's version: what a live run
	// judges for where the verdict depends on the Kubernetes version.
	ServerVersion(ctx context.Context) (*version.Info, error)
}

var _ Cluster = &kube.Client{}

// DependentsLister is the part of a Cluster the ownerReferences check
// needs: the objects of every kind whose ownerReferences name an owner
// (kube.Client.DependentsOf). A Cluster without it (a test's) skips the
// check.
type DependentsLister interface {
	DependentsOf(ctx context.Context, apiVersions []string, kind string, fn func(kube.Dependent)) (read int, skipped []string, err error)
}

var _ DependentsLister = &kube.Client{}

// Verb is the request a change of a CRD makes (kube.Verb).
type Verb = kube.Verb

const (
	VerbCreate = kube.VerbCreate
	VerbUpdate = kube.VerbUpdate
	VerbDelete = kube.VerbDelete
)

// DefaultConcurrency bounds the API requests in flight at once.
const DefaultConcurrency = kube.DefaultConcurrency

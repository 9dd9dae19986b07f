package evaluation

import (
	"context"
	"errors"
	"fmt"

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

	// The capabilities that only some Clusters have (a test's may not) are
	// methods of the interface all the same, answered with an error that
	// wraps ErrNotSupported where missing: a decorator that embeds the
	// Cluster it wraps forwards them without a line of its own, so none
	// can hide one (TestDecoratorsKeepEveryCapability, and the webhook's;
	// every live check runs through every decorator:
	// TestEveryLiveCheckThroughEveryDecorator, evaluationtest.LiveChecks).
	DependentsLister
	MigrationsLister
	ServiceProxier
}

var _ Cluster = &kube.Client{}

// ErrNotSupported is wrapped by the error of a capability a Cluster does
// not have (Unsupported): the check that needs it does not run, as without
// a cluster. Every other error of a capability is a failure to judge.
var ErrNotSupported = errors.New("not supported by this cluster")

// Unsupported answers the optional capabilities of a Cluster with
// ErrNotSupported. A Cluster of a test embeds it; a decorator never does
// (it embeds the Cluster it wraps).
type Unsupported struct{}

func (Unsupported) DependentsOf(context.Context, []string, string, func(kube.Dependent)) (int, []kube.Skipped, error) {
	return 0, nil, fmt.Errorf("listing dependents: %w", ErrNotSupported)
}

func (Unsupported) ListStorageVersionMigrations(context.Context) ([]unstructured.Unstructured, error) {
	return nil, fmt.Errorf("listing StorageVersionMigrations: %w", ErrNotSupported)
}

func (Unsupported) ServiceProxy(context.Context, string, string, int32, string) (kube.Poster, error) {
	return nil, fmt.Errorf("reaching a service: %w", ErrNotSupported)
}

// ServiceProxier is the part of a Cluster the conversion probe needs to
// reach a conversion webhook behind a Service: a Poster to path of the
// Service namespace/name on port through the apiserver's service proxy
// (kube.Client.ServiceProxy). A Cluster without it (Unsupported) skips the
// probe of such webhooks.
type ServiceProxier interface {
	ServiceProxy(ctx context.Context, namespace, name string, port int32, path string) (kube.Poster, error)
}

// DependentsLister is the part of a Cluster the ownerReferences check
// needs: the objects of every kind whose ownerReferences name an owner
// (kube.Client.DependentsOf). A Cluster without it (Unsupported) skips the
// check.
type DependentsLister interface {
	DependentsOf(ctx context.Context, apiVersions []string, kind string, fn func(kube.Dependent)) (read int, skipped []kube.Skipped, err error)
}

// Verb is the request a change of a CRD makes (kube.Verb).
type Verb = kube.Verb

const (
	VerbCreate = kube.VerbCreate
	VerbUpdate = kube.VerbUpdate
	VerbDelete = kube.VerbDelete
)

// DefaultConcurrency bounds the API requests in flight at once.
const DefaultConcurrency = kube.DefaultConcurrency

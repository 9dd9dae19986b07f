package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Dependent is an object whose ownerReferences name an owner.
type Dependent struct {
	Resource string // "configmaps", "deployments.apps", "gadgets.example.com"
	Name     string // namespace/name, or name
	// OwnerAPIVersion is the apiVersion its ownerReference names.
	OwnerAPIVersion string
}

// Skipped is a resource DependentsOf could not list: the dependents there
// are unknown.
type Skipped struct {
	Group    string // "" for the core group
	Resource string // plural: "configmaps"
	// Forbidden: the client's identity may not list it (RBAC, a
	// ForbiddenError); otherwise the apiserver could not list it (an
	// aggregated API down).
	Forbidden bool
	Err       error
}

// Name is the resource's name as kubectl spells it: "configmaps",
// "deployments.apps".
func (s Skipped) Name() string {
	return resourceName(schema.GroupVersionResource{Group: s.Group, Resource: s.Resource})
}

// metadataAccept asks the apiserver for a page of object metadata only
// (PartialObjectMetadataList): no spec, no data, whatever the kind.
const metadataAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

// DependentsOf lists, as metadata only, the objects of every listable
// resource of the cluster and calls fn with each whose ownerReferences name
// an owner of kind at one of apiVersions ("example.com/v1alpha1",
// "Widget"). It
// returns how many objects it read. The resources are listed concurrently
// (at most Concurrency), each in pages of PageSize; a resource the client
// may not list, or the apiserver cannot, is skipped and named in skipped
// (sorted by name). It needs the REST client and discovery.
func (c *Client) DependentsOf(ctx context.Context, apiVersions []string, kind string, fn func(Dependent)) (read int, skipped []Skipped, err error) {
	if c.REST == nil || c.Discovery == nil {
		return 0, nil, fmt.Errorf("listing owner references: no REST client or discovery")
	}
	lists, err := c.Discovery.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return 0, nil, fmt.Errorf("discovering the cluster's resources: %w", err)
	}
	var gvrs []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			gvrs = append(gvrs, gv.WithResource(r.Name))
		}
	}
	var mu sync.Mutex
	err = parallel.ForEach(ctx, len(gvrs), c.concurrency(), func(ctx context.Context, i int) error {
		gvr := gvrs[i]
		n, err := c.dependentsIn(ctx, gvr, apiVersions, kind, func(d Dependent) {
			mu.Lock()
			defer mu.Unlock()
			fn(d)
		})
		mu.Lock()
		defer mu.Unlock()
		read += n
		if err != nil {
			// A resource this client may not list, or one the apiserver
			// cannot list (an aggregated API down): named, not fatal.
			skipped = append(skipped, Skipped{Group: gvr.Group, Resource: gvr.Resource, Forbidden: apierrors.IsForbidden(err), Err: err})
		}
		return ctx.Err()
	})
	slices.SortFunc(skipped, func(a, b Skipped) int { return strings.Compare(a.Name(), b.Name()) })
	return read, skipped, err
}

func (c *Client) dependentsIn(ctx context.Context, gvr schema.GroupVersionResource, apiVersions []string, kind string, fn func(Dependent)) (int, error) {
	path := []string{"/apis", gvr.Group, gvr.Version, gvr.Resource}
	if gvr.Group == "" {
		path = []string{"/api", gvr.Version, gvr.Resource}
	}
	read, cont := 0, ""
	for {
		req := c.REST.Get().AbsPath(path...).Param("limit", fmt.Sprint(c.pageSize())).SetHeader("Accept", metadataAccept)
		if cont != "" {
			req = req.Param("continue", cont)
		}
		raw, err := req.Do(ctx).Raw()
		if err != nil {
			return read, err
		}
		var page metav1.PartialObjectMetadataList
		if err := json.Unmarshal(raw, &page); err != nil {
			return read, fmt.Errorf("decoding a page of %s: %w", gvr.Resource, err)
		}
		for i := range page.Items {
			m := &page.Items[i].ObjectMeta
			read++
			for _, ref := range m.OwnerReferences {
				if ref.Kind == kind && slices.Contains(apiVersions, ref.APIVersion) {
					name := m.Name
					if m.Namespace != "" {
						name = m.Namespace + "/" + name
					}
					fn(Dependent{Resource: resourceName(gvr), Name: name, OwnerAPIVersion: ref.APIVersion})
					break
				}
			}
		}
		if cont = page.Continue; cont == "" {
			return read, nil
		}
	}
}

func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}

package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// StorageVersionMigrationResource is the in-tree storage version
// migrator's API (storagemigration.k8s.io/v1), GA in Kubernetes 1.37.
var StorageVersionMigrationResource = schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"}

// StorageVersionHash returns the storageVersionHash that API discovery
// reports for gvr ("" when the server reports none).
func (c *Client) StorageVersionHash(_ context.Context, gvr schema.GroupVersionResource) (string, error) {
	if c.Discovery == nil {
		return "", fmt.Errorf("API discovery of %s: no discovery client", gvr.GroupVersion())
	}
	list, err := c.Discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
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

// ServesStorageMigration reports whether the cluster serves
// storagemigration.k8s.io/v1 StorageVersionMigrations (Kubernetes 1.37 and
// later, where kube-controller-manager migrates them).
func (c *Client) ServesStorageMigration(_ context.Context) (bool, error) {
	gv := StorageVersionMigrationResource.GroupVersion()
	if c.Discovery == nil {
		return false, fmt.Errorf("API discovery of %s: no discovery client", gv)
	}
	list, err := c.Discovery.ServerResourcesForGroupVersion(gv.String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("API discovery of %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == StorageVersionMigrationResource.Resource {
			return true, nil
		}
	}
	return false, nil
}

// serverVersionTTL is how long ServerVersion reuses the version it read:
// a long-running caller (the webhook) sees a control plane upgrade within
// it, at one request a minute at most.
const serverVersionTTL = time.Minute

// ServerVersion returns the apiserver's version (GET /version, which every
// client may read), reused for serverVersionTTL.
func (c *Client) ServerVersion(ctx context.Context) (*version.Info, error) {
	if c.Discovery == nil {
		return nil, fmt.Errorf("reading the apiserver's version: no discovery client")
	}
	c.versionMu.Lock()
	defer c.versionMu.Unlock()
	if c.version != nil && time.Since(c.versionAt) < serverVersionTTL {
		return c.version, nil
	}
	body, err := c.Discovery.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's version: %w", err)
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("reading the apiserver's version: %w", err)
	}
	c.version, c.versionAt = &info, time.Now()
	return c.version, nil
}

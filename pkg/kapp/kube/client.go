package kube

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Verb is the request a change of a CRD makes.
type Verb string

const (
	VerbCreate Verb = "create"
	VerbUpdate Verb = "update"
	VerbDelete Verb = "delete"
)

const (
	// DefaultConcurrency bounds the API requests in flight at once.
	DefaultConcurrency = 16
	// DefaultPageSize is the LIST page size for custom resources. The
	// apiserver's cost of a page grows with the objects after it (its
	// watch cache collects them all, then cuts the page): on 100,000
	// custom resources, pages of 2,000 cost it half the CPU of pages of
	// 500. A page is about the size of a validation batch.
	DefaultPageSize = 2000
)

// CRDResource is the resource of CustomResourceDefinitions.
var CRDResource = apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

var crdGVR = CRDResource

// Client reads and writes the cluster through client-go: the evaluation
// service's live checks (it implements evaluation.Cluster), the webhook's
// reads and the storage migration's reads and writes. Build it with New,
// or set its fields (tests).
type Client struct {
	Client dynamic.Interface
	// REST, when set, sends the creates and updates of DryRun: the same
	// JSON body as the dynamic client (kapp's object, byte for byte), but
	// the apiserver answers in protobuf and the answer is not decoded
	// (only its status is read). A dry run's answer is the whole CRD: as
	// JSON it costs the apiserver an encoding and kapp a decoding of every
	// large schema, for nothing. It needs a client whose serializer
	// decodes a protobuf metav1.Status (client-go's scheme.Codecs), such
	// as a clientset's discovery RESTClient. nil: the dynamic client.
	REST rest.Interface
	// Discovery reads API discovery (the storage migration's
	// StorageVersionHash and ServesStorageMigration); nil: those fail.
	Discovery   discovery.DiscoveryInterface
	Concurrency int   // requests in flight for GetCRDs; DefaultConcurrency if 0
	PageSize    int64 // LIST limit for custom resources; DefaultPageSize if 0

	// The apiserver's version as ServerVersion last read it, and when.
	versionMu sync.Mutex
	version   *version.Info
	versionAt time.Time
}

// New returns a Client over a dynamic client and a clientset: dry runs and
// pages of custom resources go through the clientset's discovery
// RESTClient (see Client.REST), API discovery through its discovery client.
func New(dyn dynamic.Interface, core kubernetes.Interface) *Client {
	return &Client{Client: dyn, REST: core.Discovery().RESTClient(), Discovery: core.Discovery()}
}

// GetCRDError is the error of GetCRDs when the GET of one CRD failed. It
// unwraps to the request's error.
type GetCRDError struct {
	Name string
	Err  error
}

func (e *GetCRDError) Error() string { return fmt.Sprintf("getting CRD %s: %v", e.Name, e.Err) }

func (e *GetCRDError) Unwrap() error { return e.Err }

// GetCRDs fetches the named CRDs with concurrent GETs (at most Concurrency
// in flight): ceil(n/Concurrency) round trips of latency instead of n, and
// without the cost of LISTing every CRD of the cluster.
func (c *Client) GetCRDs(ctx context.Context, names []string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	crds := make([]*apiextv1.CustomResourceDefinition, len(names))
	err := parallel.ForEach(ctx, len(names), c.concurrency(), func(ctx context.Context, i int) error {
		u, err := c.Client.Resource(crdGVR).Get(ctx, names[i], metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return &GetCRDError{Name: names[i], Err: forbidden(err, crdGVR, "get")}
		}
		crd := &apiextv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			return fmt.Errorf("decoding live CRD %s: %w", names[i], err)
		}
		crds[i] = crd
		return nil
	})
	if err != nil {
		return nil, err
	}
	result := make(map[string]*apiextv1.CustomResourceDefinition, len(names))
	for i, crd := range crds {
		if crd != nil {
			result[names[i]] = crd
		}
	}
	return result, nil
}

// ListCustomResources lists crd's custom resources at version page by page
// (Limit/Continue), so memory stays bounded by the page size. The next
// page is read while fn handles the current one: the apiserver's work for
// a page (reading it from its cache, encoding it) and kapp's (decoding,
// validating) overlap, with at most two pages in memory.
func (c *Client) ListCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition,
	version string, fn func(objs []map[string]any) error) error {

	gvr := CustomResourceGVR(crd, version)
	ctx, cancel := context.WithCancel(ctx)
	pages := make(chan []map[string]any)
	var listErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(pages)
		opts := metav1.ListOptions{Limit: c.pageSize()}
		for {
			objs, cont, err := c.listPage(ctx, gvr, opts)
			if err != nil {
				listErr = fmt.Errorf("listing %s of CRD %s at version %s: %w", crd.Spec.Names.Plural, crd.Name, version, err)
				return
			}
			if len(objs) > 0 {
				select {
				case pages <- objs:
				case <-ctx.Done():
					return
				}
			}
			opts.Continue = cont
			if opts.Continue == "" {
				return
			}
		}
	}()
	var fnErr error
	for objs := range pages {
		if fnErr = fn(objs); fnErr != nil {
			break
		}
	}
	cancel() // stops the reader when fn failed
	<-done
	if fnErr != nil {
		return fnErr
	}
	return listErr
}

// listPage reads one page of custom resources: the objects and the
// continue token. With REST, the page is decoded in one pass into the
// objects; the dynamic client decodes a list three times over (the items
// as raw JSON, the whole list into a map, then each item), which was half
// the cost of reading custom resources.
func (c *Client) listPage(ctx context.Context, gvr schema.GroupVersionResource, opts metav1.ListOptions) ([]map[string]any, string, error) {
	if c.REST == nil {
		list, err := c.Client.Resource(gvr).List(ctx, opts)
		if err != nil {
			return nil, "", forbidden(err, gvr, "list")
		}
		objs := make([]map[string]any, len(list.Items))
		for i := range list.Items {
			objs[i] = list.Items[i].Object
		}
		return objs, list.GetContinue(), nil
	}
	req := c.REST.Get().AbsPath("/apis", gvr.Group, gvr.Version, gvr.Resource).
		Param("limit", strconv.FormatInt(opts.Limit, 10)).
		SetHeader("Accept", runtime.ContentTypeJSON)
	if opts.Continue != "" {
		req = req.Param("continue", opts.Continue)
	}
	raw, err := req.Do(ctx).Raw()
	if err != nil {
		return nil, "", forbidden(err, gvr, "list")
	}
	items, cont, err := decodePage(raw)
	if err != nil {
		return nil, "", fmt.Errorf("decoding a page of %s: %w", gvr.Resource, err)
	}
	return items, cont, nil
}

// CountCustomResources issues one LIST with limit 1 and adds the API
// server's remainingItemCount. Only when the server does not report that
// count does it page through the rest, counting.
func (c *Client) CountCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition) (int, error) {
	version := ListVersion(crd)
	if version == "" {
		return 0, fmt.Errorf("counting custom resources of CRD %s: no served version to list them at", crd.Name)
	}
	gvr := CustomResourceGVR(crd, version)
	ri := c.Client.Resource(gvr)
	list, err := ri.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("counting custom resources of CRD %s: %w", crd.Name, forbidden(err, gvr, "list"))
	}
	n := len(list.Items)
	if list.GetContinue() == "" {
		return n, nil
	}
	if rem := list.GetRemainingItemCount(); rem != nil {
		return n + int(*rem), nil
	}
	opts := metav1.ListOptions{Limit: c.pageSize(), Continue: list.GetContinue()}
	for opts.Continue != "" {
		list, err = ri.List(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("counting custom resources of CRD %s: %w", crd.Name, forbidden(err, gvr, "list"))
		}
		n += len(list.Items)
		opts.Continue = list.GetContinue()
	}
	return n, nil
}

// DryRun sends the request as kapp's clusterapply would (a POST, a PUT of
// the whole object, a DELETE with background propagation and the UID as
// precondition), with dryRun=All. The apiserver's warnings are returned
// for creates and updates sent through REST (the dynamic client hands
// them to the process-wide warning handler instead).
func (c *Client) DryRun(ctx context.Context, verb Verb, obj *unstructured.Unstructured) ([]string, error) {
	if c.REST != nil && (verb == VerbCreate || verb == VerbUpdate) {
		return c.restDryRun(ctx, verb, obj)
	}
	ri := c.Client.Resource(crdGVR)
	dryRun := []string{metav1.DryRunAll}
	var err error
	switch verb {
	case VerbCreate:
		_, err = ri.Create(ctx, obj, metav1.CreateOptions{DryRun: dryRun})
	case VerbUpdate:
		_, err = ri.Update(ctx, obj, metav1.UpdateOptions{DryRun: dryRun})
	case VerbDelete:
		background := metav1.DeletePropagationBackground
		opts := metav1.DeleteOptions{DryRun: dryRun, PropagationPolicy: &background}
		if uid := obj.GetUID(); uid != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		}
		err = ri.Delete(ctx, obj.GetName(), opts)
	default:
		return nil, fmt.Errorf("dry run of CRD %s: unknown verb %q", obj.GetName(), verb)
	}
	return nil, err
}

// crdsPath is the path of the CRD collection (crdGVR's).
var crdsPath = "/apis/" + crdGVR.Group + "/" + crdGVR.Version + "/" + crdGVR.Resource

// restDryRun sends a create (POST) or update (PUT) of obj with dryRun=All:
// the JSON body the dynamic client sends, asking for a protobuf answer that
// is not decoded unless it is an error status, and collecting the
// apiserver's warnings.
func (c *Client) restDryRun(ctx context.Context, verb Verb, obj *unstructured.Unstructured) ([]string, error) {
	body, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("dry run of CRD %s: encoding: %w", obj.GetName(), err)
	}
	req := c.REST.Post().AbsPath(crdsPath)
	if verb == VerbUpdate {
		req = c.REST.Put().AbsPath(crdsPath, obj.GetName())
	}
	warnings := &warningCollector{}
	err = req.Param("dryRun", metav1.DryRunAll).
		WarningHandler(warnings).
		SetHeader("Content-Type", runtime.ContentTypeJSON).
		SetHeader("Accept", runtime.ContentTypeProtobuf+", "+runtime.ContentTypeJSON).
		Body(body).Do(ctx).Error()
	return warnings.texts, err
}

// warningCollector keeps the warnings of one request, in order.
type warningCollector struct{ texts []string }

func (w *warningCollector) HandleWarningHeader(code int, _ string, text string) {
	if code == 299 && text != "" {
		w.texts = append(w.texts, text)
	}
}

func (c *Client) concurrency() int {
	if c.Concurrency > 0 {
		return c.Concurrency
	}
	return DefaultConcurrency
}

func (c *Client) pageSize() int64 {
	if c.PageSize > 0 {
		return c.PageSize
	}
	return DefaultPageSize
}

// CustomResourceGVR is the resource of crd's custom resources at version.
func CustomResourceGVR(crd *apiextv1.CustomResourceDefinition, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
}

// ListVersion is the version to read a CRD's custom resources at: the
// storage version if served, else the first served one ("" if none).
func ListVersion(crd *apiextv1.CustomResourceDefinition) string {
	first := ""
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if v.Storage {
			return v.Name
		}
		if first == "" {
			first = v.Name
		}
	}
	return first
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

type cluster struct {
	dyn  dynamic.Interface
	core kubernetes.Interface
}

func newCluster(kubeconfig string) (*cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 2000, 4000 // the benchmark's own bulk requests
	cfg.Timeout = 5 * time.Minute
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &cluster{dyn: dyn, core: core}, nil
}

var crdGVR = apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// applyCRD creates (or replaces) a CRD and waits until it is established.
func (c *cluster) applyCRD(ctx context.Context, crd *apiextv1.CustomResourceDefinition) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	ri := c.dyn.Resource(crdGVR)
	if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		live, err := ri.Get(ctx, crd.Name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
			for _, cd := range conds {
				m, _ := cd.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("CRD %s not established", crd.Name)
}

// createObjects creates objects from..to-1 of a CRD (make(i) builds the
// i-th, build(i)) with workers concurrent requests; existing ones are kept.
func (c *cluster) createObjects(ctx context.Context, gvr schema.GroupVersionResource, namespace string,
	from, to, workers int, build func(i int) *unstructured.Unstructured) error {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				var ri dynamic.ResourceInterface = c.dyn.Resource(gvr)
				if namespace != "" {
					ri = c.dyn.Resource(gvr).Namespace(namespace)
				}
				for attempt := 0; ; attempt++ {
					_, err := ri.Create(ctx, build(i), metav1.CreateOptions{})
					if err == nil || apierrors.IsAlreadyExists(err) {
						break
					}
					if attempt == 5 {
						errs <- fmt.Errorf("creating object %d: %w", i, err)
						return
					}
					time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// customResources are the custom resources the benchmarks create for a
// CRD: copies of one minimal valid object (minimalObject), cr-000000,
// cr-000001, ..., at the storage version.
type customResources struct {
	gvr       schema.GroupVersionResource
	namespace string
	template  map[string]any
}

func customResourcesOf(crd *apiextv1.CustomResourceDefinition) (customResources, error) {
	template, ok := minimalObject(crd, "cr")
	if !ok {
		return customResources{}, fmt.Errorf("CRD %s: no valid minimal custom resource", crd.Name)
	}
	var storage string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	ns, _ := template["metadata"].(map[string]any)["namespace"].(string)
	return customResources{
		gvr:       schema.GroupVersionResource{Group: crd.Spec.Group, Version: storage, Resource: crd.Spec.Names.Plural},
		namespace: ns, template: template,
	}, nil
}

// createCustomResources creates the custom resources from..to-1 of crs
// with workers concurrent requests; existing ones are kept.
func (c *cluster) createCustomResources(ctx context.Context, crs customResources, from, to, workers int) error {
	return c.createObjects(ctx, crs.gvr, crs.namespace, from, to, workers, func(i int) *unstructured.Unstructured {
		o := deepCopy(crs.template)
		o["metadata"].(map[string]any)["name"] = fmt.Sprintf("cr-%06d", i)
		return &unstructured.Unstructured{Object: o}
	})
}

// requestCounts are the apiserver's apiserver_request_total counters,
// summed per category (see category).
type requestCounts map[string]float64

var metricLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)
var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// requests reads the apiserver's request counters from /metrics.
func (c *cluster) requests(ctx context.Context, benchGroup string) (requestCounts, error) {
	raw, err := c.core.CoreV1().RESTClient().(*rest.RESTClient).Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	counts := requestCounts{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := metricLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range labelPair.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		counts[category(labels, benchGroup)] += v
	}
	return counts, sc.Err()
}

// category names what a request was about: CRD reads, CRD writes, CRD
// server-side dry runs, reads of the benchmark's custom resources, other.
func category(l map[string]string, benchGroup string) string {
	verb := l["verb"]
	switch {
	case l["resource"] == "customresourcedefinitions" && l["dry_run"] != "":
		return "CRD dry runs"
	case l["resource"] == "customresourcedefinitions" && (verb == "GET" || verb == "LIST" || verb == "WATCH"):
		return "CRD reads (GET, LIST, WATCH)"
	case l["resource"] == "customresourcedefinitions":
		return "CRD writes"
	case strings.HasSuffix(l["group"], benchGroup) && (verb == "GET" || verb == "LIST" || verb == "WATCH"):
		return "custom resource reads"
	case strings.HasSuffix(l["group"], benchGroup):
		return "custom resource writes"
	case l["resource"] == "":
		return "non-resource (/metrics, discovery, ...)"
	}
	return "other resources"
}

func (a requestCounts) minus(b requestCounts) requestCounts {
	d := requestCounts{}
	for k, v := range a {
		d[k] = v - b[k]
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d[k] = -v
		}
	}
	return d
}

func (a requestCounts) total() float64 {
	t := 0.0
	for _, v := range a {
		t += v
	}
	return t
}

func (a requestCounts) keys() []string {
	ks := make([]string, 0, len(a))
	for k := range a {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

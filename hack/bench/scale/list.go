package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// list measures one LIST of a CRD's custom resources at several counts,
// the figure beside the conversion probe's (hack/bench-conversion.sh): a
// widgets CRD shaped as BenchmarkProbe's (pkg/kapp/conversion), objects
// created in bulk up to each count, then per run one LIST of all of them
// in pages of -page objects (kapp's page size by default) and one without
// pages, each timed from the first request to the last object decoded.
func listBench(args []string) error {
	fs := flag.NewFlagSet("list", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	counts := fs.String("counts", "1000,10000", "object counts, ascending")
	runs := fs.Int("runs", 3, "LISTs per count and way")
	page := fs.Int64("page", 2000, "page size (kapp's DefaultPageSize)")
	workers := fs.Int("workers", 32, "concurrent creates")
	_ = fs.Parse(args)
	c, err := newCluster(*kubeconfig)
	if err != nil {
		return err
	}
	ctx := context.Background()
	crd := listWidgetsCRD()
	if err := c.applyCRD(ctx, crd); err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	build := func(i int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": crd.Spec.Group + "/v1", "kind": crd.Spec.Names.Kind,
			"metadata": map[string]any{"name": fmt.Sprintf("w%05d", i), "namespace": "default", "labels": map[string]any{"app": "bench"}},
			"spec":     map[string]any{"title": "title", "size": int64(i), "color": "red"},
		}}
	}
	from := 0
	fmt.Printf("%-8s %-14s %-20s %-22s %s\n", "objects", "way", "LIST ms (min-max)", "ms/object (min-max)", "pages")
	for _, s := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("counts: %w", err)
		}
		start := time.Now()
		if err := c.createObjects(ctx, gvr, "default", from, n, *workers, build); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "list: %d objects created in %s\n", n-from, time.Since(start).Round(time.Millisecond))
		from = n
		for _, limit := range []int64{*page, 0} {
			var ms []float64
			pages := 0
			for r := 0; r < *runs; r++ {
				t0 := time.Now()
				got, p := 0, 0
				opts := metav1.ListOptions{Limit: limit}
				for {
					l, err := c.dyn.Resource(gvr).List(ctx, opts)
					if err != nil {
						return fmt.Errorf("listing: %w", err)
					}
					got, p = got+len(l.Items), p+1
					if opts.Continue = l.GetContinue(); opts.Continue == "" {
						break
					}
				}
				if got != n {
					return fmt.Errorf("listed %d objects, want %d", got, n)
				}
				ms, pages = append(ms, float64(time.Since(t0).Microseconds())/1000), p
			}
			way := "unpaged"
			if limit > 0 {
				way = fmt.Sprintf("pages of %d", limit)
			}
			lo, hi := slices.Min(ms), slices.Max(ms)
			fmt.Printf("%-8d %-14s %-20s %-22s %d\n", n, way, fmt.Sprintf("%.0f-%.0f", lo, hi),
				fmt.Sprintf("%.3f-%.3f", lo/float64(n), hi/float64(n)), pages)
		}
	}
	return nil
}

// listWidgetsCRD is the CRD of the LIST benchmark: one version with the
// fields of BenchmarkProbe's widgets.
func listWidgetsCRD() *apiextv1.CustomResourceDefinition {
	str := apiextv1.JSONSchemaProps{Type: "string"}
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.bench-list.example.com"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "bench-list.example.com", Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
						"title": str, "color": str, "size": {Type: "integer"}}}}}}}},
		},
	}
}

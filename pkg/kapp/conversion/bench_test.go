package conversion

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkProbe probes 1,000 and 10,000 widgets stored at v1 (storedVersions
// [v1 v2], three served versions) through a lossless webhook on loopback
// TLS. It reports objects/s and ms/object of the whole probe, and
// ms/conversion: one object through the webhook once, the unit of the
// apiserver's budget (about 4 ms per object, webhook_converter.go).
// docs/benchmarks.md keeps the figures.
func BenchmarkProbe(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			crd, _ := serve(b, &hook{})
			objects := make([]*unstructured.Unstructured, n)
			for i := range objects {
				objects[i] = widget(fmt.Sprintf("w%05d", i), "v1", "title", int64(i), "red", map[string]string{"app": "bench"})
			}
			b.ReportAllocs()
			b.ResetTimer()
			var r *Report
			for i := 0; i < b.N; i++ {
				var err error
				if r, err = Probe(context.Background(), crd, objects, Options{}); err != nil {
					b.Fatal(err)
				}
				if r.Probed != n || len(r.Results) != 0 {
					b.Fatalf("probed %d, %d results", r.Probed, len(r.Results))
				}
			}
			elapsed := b.Elapsed().Seconds()
			total := float64(n * b.N)
			b.ReportMetric(total/elapsed, "objects/s")
			b.ReportMetric(elapsed*1000/total, "ms/object")
			b.ReportMetric(elapsed*1000/float64(r.Conversions*b.N), "ms/conversion")
			b.ReportMetric(float64(r.Conversions)/float64(n), "conversions/object")
			b.ReportMetric(float64(r.Reviews), "reviews/op")
		})
	}
}

package evaluation

import (
	"context"
	"fmt"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/crdsafety/kapp/pkg/kapp/kube/kubetest"
)

// BenchmarkExistingResources runs the existingResources check of an update
// on N existing custom resources, read page by page (kube.DefaultPageSize)
// through kube.Client from an apiserver stub, and read as the apiserver
// will under the new CRD in batches (objectsPerRead). It reports the time per custom resource, which
// must stay flat as N grows (linear total), and the highest live heap of
// the run, which must stay flat too (bounded pages and batches):
//
//	go test -run '^$' -bench ExistingResources -benchtime 3x ./pkg/kapp/evaluation/
func BenchmarkExistingResources(b *testing.B) {
	old, safe := mustCRD(b, oldCRD), mustCRD(b, safeCRD)
	cfg := config.Default()
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			api := &kubetest.APIServer{T: b, Widgets: n, ReportRemaining: true,
				Spec: map[string]any{"size": 2, "color": "red"}}
			cluster := api.Start()
			cluster.PageSize = kube.DefaultPageSize
			var peak atomic.Uint64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
				for {
					metrics.Read(sample)
					if v := sample[0].Value.Uint64(); v > peak.Load() {
						peak.Store(v)
					}
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
					}
				}
			}()
			for b.Loop() {
				api.ResetRequests()
				read := 0
				tracker := &liveTracker{report: func(p LiveProgress) { read = p.CustomResources }}
				src := &clusterObjects{pair: Pair{Old: old, New: safe}, cluster: cluster, tracker: tracker}
				fs, err := crdupgradesafety.Judge(context.Background(), crdupgradesafety.Pair{Old: old, New: safe, Compared: true}, &cfg, src)
				if err != nil || len(fs) != 0 || read != n {
					b.Fatalf("want %d objects read and no findings, got %d, %v, %v", n, read, fs, err)
				}
			}
			close(stop)
			<-done
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/object")
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-live-MiB")
		})
	}
}

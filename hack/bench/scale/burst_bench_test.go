package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
)

// BenchmarkBurstRead is the engine's part of the burst of
// hack/bench-webhook.sh without a cluster: the stored objects of each of
// the 10 largest CRDs (1,000 minimal custom resources each, as the burst
// creates them) read under its updated CRD, as a review of the burst reads
// them (objects.ObjectReader). One iteration is one burst. For a
// profile of where a burst's CPU goes:
//
//	cd hack/bench && go test ./scale -run '^$' -bench BurstRead -benchtime 5x -cpuprofile /tmp/burst.prof
func BenchmarkBurstRead(b *testing.B) {
	files, err := largestCRDs("../../../.cache/crds")
	if err != nil {
		b.Fatal(err)
	}
	type item struct {
		p    benchPair
		objs []map[string]any
	}
	var items []item
	for _, f := range files {
		p, _, err := preparePair(context.Background(), f, "burst.webhook.bench.example.com", nil, 0)
		if err != nil {
			continue
		}
		crs, err := customResourcesOf(p.oldCRD)
		if err != nil {
			continue
		}
		objs := make([]map[string]any, 1000)
		for i := range objs {
			o := deepCopy(crs.template)
			o["metadata"].(map[string]any)["name"] = fmt.Sprintf("cr-%06d", i)
			objs[i] = o
		}
		items = append(items, item{p, objs})
		if len(items) == 10 {
			break
		}
	}
	cfg := config.Default()
	for b.Loop() {
		for _, it := range items {
			for _, v := range objects.VersionsToRead(it.p.oldCRD, it.p.newCRD) {
				r, err := objects.NewObjectReaderFor(finding.NewPolicy(&cfg, it.p.newCRD.Name), it.p.oldCRD, it.p.newCRD, v, finding.SourceCluster, nil)
				if err != nil {
					b.Fatal(err)
				}
				r.Read(it.objs)
				_ = r.Result()
			}
		}
	}
}

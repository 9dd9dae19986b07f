package yamljson

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// BenchmarkToJSON converts prometheus-operator's prometheuses CRD (~790 KB,
// from hack/fetch-crds.sh) with the streaming conversion and with
// YAMLToJSON: go test -bench ToJSON -benchmem ./pkg/kapp/internal/yamljson/
func BenchmarkToJSON(b *testing.B) {
	doc, err := os.ReadFile("../../../../.cache/crds/prometheus-operator/monitoring.coreos.com_prometheuses.yaml")
	if err != nil {
		b.Skip("no real CRDs: run hack/fetch-crds.sh")
	}
	doc = doc[len("---\n"):]
	if _, ok := Convert(doc); !ok {
		b.Fatal("the streaming conversion left prometheuses to YAMLToJSON")
	}
	b.Run("engine=streaming", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, err := ToJSON(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("engine=YAMLToJSON", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, err := yaml.YAMLToJSON(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package tools

import (
	"os"
	"path/filepath"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/cppforlife/go-cli-ui/ui"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Real CRDs come from hack/fetch-crds.sh (git-ignored .cache/crds).
var benchDir = filepath.Join("..", "..", "..", "..", ".cache", "crds", "prometheus-operator")

func benchFiles(b *testing.B) []string {
	files, _ := filepath.Glob(filepath.Join(benchDir, "*.yaml"))
	if len(files) == 0 {
		b.Skip("no real CRDs: run hack/fetch-crds.sh")
	}
	return files
}

// BenchmarkCRDUpgradeSafetyTool runs the whole offline command on the
// prometheus-operator CRDs as old and new. Compare with
// BenchmarkParseOnly (the design's budget: within 1.5x of parsing).
func BenchmarkCRDUpgradeSafetyTool(b *testing.B) {
	benchFiles(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		o := NewCRDUpgradeSafetyOptions(ui.NewNoopUI(), nil)
		o.FileFlags = CRDUpgradeSafetyFileFlags{OldFiles: []string{benchDir}, NewFiles: []string{benchDir}}
		if err := o.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseOnly reads and parses the same inputs (both sides) into
// typed CRDs, one document after the other, with sigs.k8s.io/yaml.
func BenchmarkParseOnly(b *testing.B) {
	files := benchFiles(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for side := 0; side < 2; side++ {
			for _, f := range files {
				bs, err := os.ReadFile(f)
				if err != nil {
					b.Fatal(err)
				}
				docs, err := ctlres.NewYAMLFile(ctlres.NewBytesSource(bs)).Docs()
				if err != nil {
					b.Fatal(err)
				}
				for _, d := range docs {
					var crd apiextv1.CustomResourceDefinition
					if err := yaml.Unmarshal(d, &crd); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
}

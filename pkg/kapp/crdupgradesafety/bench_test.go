package crdupgradesafety

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// mutatePrometheuses removes ^.spec.enableAdminAPI and adds a minimum to
// ^.spec.replicas in every version: a field removal and a bound change,
// two findings per version.
func mutatePrometheuses(tb testing.TB, crd *apiextv1.CustomResourceDefinition) {
	tb.Helper()
	for i := range crd.Spec.Versions {
		root := crd.Spec.Versions[i].Schema.OpenAPIV3Schema
		spec, ok := root.Properties["spec"]
		if !ok {
			tb.Fatalf("prometheuses %s: no ^.spec", crd.Spec.Versions[i].Name)
		}
		if _, ok := spec.Properties["enableAdminAPI"]; !ok {
			tb.Fatalf("prometheuses %s: no ^.spec.enableAdminAPI", crd.Spec.Versions[i].Name)
		}
		delete(spec.Properties, "enableAdminAPI")
		replicas, ok := spec.Properties["replicas"]
		if !ok || replicas.Minimum != nil {
			tb.Fatalf("prometheuses %s: want ^.spec.replicas without a minimum", crd.Spec.Versions[i].Name)
		}
		one := 1.0
		replicas.Minimum = &one
		spec.Properties["replicas"] = replicas
	}
}

// BenchmarkCompare compares prometheus-operator's prometheuses CRD (the
// largest real CRD we know of, ~800 KB) with a separately parsed copy of
// itself and with a lightly mutated copy. Parse is the cost of reading the
// file, for scale.
//
//	hack/fetch-crds.sh
//	go test -run '^$' -bench Compare -benchmem ./pkg/kapp/crdupgradesafety/
func BenchmarkCompare(b *testing.B) {
	raw, old := enginetest.ReadRealCRD(b, enginetest.PrometheusesCRD)
	same := enginetest.ParseRealCRD(b, enginetest.PrometheusesCRD, raw)
	mutated := enginetest.ParseRealCRD(b, enginetest.PrometheusesCRD, raw)
	mutatePrometheuses(b, mutated)
	cfg := config.Default()

	if fs := Compare(old, same, &cfg); len(fs) != 0 {
		b.Fatalf("self-compare: want no findings, got:\n%s", enginetest.GoldenText(fs))
	}
	if fs := Compare(old, mutated, &cfg); len(fs) != 2*len(old.Spec.Versions) {
		b.Fatalf("mutated: want a removal and a minimum per version, got:\n%s", enginetest.GoldenText(fs))
	}

	b.Run("prometheuses/self", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			Compare(old, same, &cfg)
		}
	})
	b.Run("prometheuses/mutated", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			Compare(old, mutated, &cfg)
		}
	})
	b.Run("prometheuses/parse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var crd apiextv1.CustomResourceDefinition
			if err := yaml.Unmarshal(raw, &crd); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCompareAllReal compares every fetched real CRD with a separate
// copy of itself, one iteration covering them all.
func BenchmarkCompareAllReal(b *testing.B) {
	type pair struct {
		old, new *apiextv1.CustomResourceDefinition
	}
	var pairs []pair
	var size int64
	root := enginetest.RealCRDDir(b)
	for _, rel := range enginetest.RealCRDFiles(b) {
		raw, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			b.Fatal(err)
		}
		size += int64(len(raw))
		pairs = append(pairs, pair{enginetest.ParseRealCRD(b, rel, raw), enginetest.ParseRealCRD(b, rel, raw)})
	}
	cfg := config.Default()
	b.ReportAllocs()
	b.SetBytes(size)
	for b.Loop() {
		for _, p := range pairs {
			Compare(p.old, p.new, &cfg)
		}
	}
}

// TestRealCRDsSelfCompare compares every fetched real CRD with a separately
// parsed copy of itself (no findings), and every gateway-api standard CRD
// with its experimental variant (findings are logged; they must be well
// formed and sorted).
func TestRealCRDsSelfCompare(t *testing.T) {
	root := enginetest.RealCRDDir(t)
	cfg := config.Default()
	for _, rel := range enginetest.RealCRDFiles(t) {
		t.Run(rel, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			old, new := enginetest.ParseRealCRD(t, rel, raw), enginetest.ParseRealCRD(t, rel, raw)
			if fs := Compare(old, new, &cfg); len(fs) > 0 {
				t.Errorf("comparing %s with a copy of itself: want no findings, got %d:\n%s", rel, len(fs), enginetest.GoldenText(fs))
			}
			if fs := Compare(old, old, &cfg); len(fs) > 0 {
				t.Errorf("comparing %s with itself: want no findings, got %d:\n%s", rel, len(fs), enginetest.GoldenText(fs))
			}
		})
	}

	standard := filepath.Join("gateway-api", "standard")
	for _, rel := range enginetest.RealCRDFiles(t) {
		if filepath.Dir(rel) != standard {
			continue
		}
		expRel := filepath.Join("gateway-api", "experimental", filepath.Base(rel))
		t.Run("standard-to-experimental/"+filepath.Base(rel), func(t *testing.T) {
			stdRaw, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			expRaw, err := os.ReadFile(filepath.Join(root, expRel))
			if os.IsNotExist(err) {
				t.Skipf("no experimental variant of %s", rel)
			}
			if err != nil {
				t.Fatal(err)
			}
			std, exp := enginetest.ParseRealCRD(t, rel, stdRaw), enginetest.ParseRealCRD(t, expRel, expRaw)
			fs := Compare(std, exp, &cfg)
			checkFindingInvariants(t, exp.Name, fs)
			back := Compare(exp, std, &cfg)
			checkFindingInvariants(t, std.Name, back)
			t.Logf("%s: standard -> experimental: %d findings, experimental -> standard: %d findings",
				exp.Name, len(fs), len(back))
			for i, f := range fs {
				if i == 5 {
					t.Logf("  ... and %d more", len(fs)-i)
					break
				}
				line := enginetest.GoldenLine(f)
				if len(line) > 160 {
					line = line[:160] + "..."
				}
				t.Logf("  %s", line)
			}
		})
	}
}

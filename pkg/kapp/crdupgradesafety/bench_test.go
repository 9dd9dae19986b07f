package crdupgradesafety

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Real CRDs are not committed: hack/fetch-crds.sh copies them from the Go
// modules that ship them (prometheus-operator, cert-manager, gateway-api)
// into the git-ignored .cache/crds/ of the repository.
const fetchCRDsHint = "real CRDs not found in .cache/crds/: run hack/fetch-crds.sh first"

const prometheusesCRD = "prometheus-operator/monitoring.coreos.com_prometheuses.yaml"

// realCRDDir returns <repo>/.cache/crds, or skips the test when it is absent.
func realCRDDir(tb testing.TB) string {
	tb.Helper()
	crds, ok := realCRDDirIfPresent(tb)
	if !ok {
		tb.Skip(fetchCRDsHint)
	}
	return crds
}

// realCRDDirIfPresent returns <repo>/.cache/crds and whether it exists.
func realCRDDirIfPresent(tb testing.TB) (string, bool) {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatalf("getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("no go.mod above the test's directory")
		}
		dir = parent
	}
	crds := filepath.Join(dir, ".cache", "crds")
	fi, err := os.Stat(crds)
	return crds, err == nil && fi.IsDir()
}

// readRealCRD reads and parses one real CRD file (path relative to
// .cache/crds), skipping when it is absent.
func readRealCRD(tb testing.TB, rel string) ([]byte, *apiextv1.CustomResourceDefinition) {
	tb.Helper()
	path := filepath.Join(realCRDDir(tb), rel)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		tb.Skipf("%s: %s is missing", fetchCRDsHint, rel)
	}
	if err != nil {
		tb.Fatalf("reading %s: %v", path, err)
	}
	return b, parseRealCRD(tb, path, b)
}

func parseRealCRD(tb testing.TB, path string, b []byte) *apiextv1.CustomResourceDefinition {
	tb.Helper()
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		tb.Fatalf("parsing %s: %v", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		tb.Fatalf("%s: kind %q, want CustomResourceDefinition", path, crd.Kind)
	}
	return &crd
}

// realCRDFiles lists the YAML files under .cache/crds (relative paths,
// sorted).
func realCRDFiles(tb testing.TB) []string {
	tb.Helper()
	files := realCRDFilesIn(tb, realCRDDir(tb))
	if len(files) == 0 {
		tb.Skip(fetchCRDsHint)
	}
	return files
}

// realCRDFilesIn lists the YAML files under root (relative paths, sorted).
func realCRDFilesIn(tb testing.TB, root string) []string {
	tb.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("listing %s: %v", root, err)
	}
	sort.Strings(files)
	return files
}

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
	raw, old := readRealCRD(b, prometheusesCRD)
	same := parseRealCRD(b, prometheusesCRD, raw)
	mutated := parseRealCRD(b, prometheusesCRD, raw)
	mutatePrometheuses(b, mutated)
	cfg := config.Default()

	if fs := Compare(old, same, &cfg); len(fs) != 0 {
		b.Fatalf("self-compare: want no findings, got:\n%s", goldenText(fs))
	}
	if fs := Compare(old, mutated, &cfg); len(fs) != 2*len(old.Spec.Versions) {
		b.Fatalf("mutated: want a removal and a minimum per version, got:\n%s", goldenText(fs))
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
	root := realCRDDir(b)
	for _, rel := range realCRDFiles(b) {
		raw, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			b.Fatal(err)
		}
		size += int64(len(raw))
		pairs = append(pairs, pair{parseRealCRD(b, rel, raw), parseRealCRD(b, rel, raw)})
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
	root := realCRDDir(t)
	cfg := config.Default()
	for _, rel := range realCRDFiles(t) {
		t.Run(rel, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			old, new := parseRealCRD(t, rel, raw), parseRealCRD(t, rel, raw)
			if fs := Compare(old, new, &cfg); len(fs) > 0 {
				t.Errorf("comparing %s with a copy of itself: want no findings, got %d:\n%s", rel, len(fs), goldenText(fs))
			}
			if fs := Compare(old, old, &cfg); len(fs) > 0 {
				t.Errorf("comparing %s with itself: want no findings, got %d:\n%s", rel, len(fs), goldenText(fs))
			}
		})
	}

	standard := filepath.Join("gateway-api", "standard")
	for _, rel := range realCRDFiles(t) {
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
			std, exp := parseRealCRD(t, rel, stdRaw), parseRealCRD(t, expRel, expRaw)
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
				line := goldenLine(f)
				if len(line) > 160 {
					line = line[:160] + "..."
				}
				t.Logf("  %s", line)
			}
		})
	}
}

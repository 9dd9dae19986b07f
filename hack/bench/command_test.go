package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/cmd/tools"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/apivalidation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// commandPair is an old and a new CRD file (paths relative to the CRD
// folder, or absolute for generated files).
type commandPair struct {
	name     string
	old, new string
}

// commandPairs are the pairs of BenchmarkCommand: the large real CRDs of
// realPairs, as files, and real cluster-api upgrades (cluster-api/old is an
// earlier release than cluster-api/new). Names must not contain '/' or '='.
func commandPairs(tb testing.TB) []commandPair {
	capi := func(name, file string) commandPair {
		return commandPair{name, filepath.Join("cluster-api", "old", file), filepath.Join("cluster-api", "new", file)}
	}
	self := func(name, file string) commandPair { return commandPair{name, file, file} }
	return []commandPair{
		capi("capi-clusters-upgrade", "cluster.x-k8s.io_clusters.yaml"),
		capi("capi-clusterclasses-upgrade", "cluster.x-k8s.io_clusterclasses.yaml"),
		capi("capi-kcp-upgrade", "controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml"),
		capi("capi-kubeadmconfigtemplates-upgrade", "bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml"),
		self("prometheuses-self", prometheusesFile),
		{"prometheuses-mutated", prometheusesFile, mutatedPrometheusesFile(tb)},
		self("alertmanagers-self", "prometheus-operator/monitoring.coreos.com_alertmanagers.yaml"),
		self("thanosrulers-self", "prometheus-operator/monitoring.coreos.com_thanosrulers.yaml"),
		{"httproutes-std-to-exp", filepath.Join("gateway-api", "standard", httproutesFile), filepath.Join("gateway-api", "experimental", httproutesFile)},
		self("certificates-self", "cert-manager/cert-manager.io_certificates.yaml"),
	}
}

// mutatedPrometheusesFile writes the prometheuses CRD of the
// prometheuses-mutated pair (a field removed, a bound added) to a file.
func mutatedPrometheusesFile(tb testing.TB) string {
	tb.Helper()
	crd := readCRD(tb, prometheusesFile)
	mutatePrometheuses(tb, crd, true, true)
	b, err := yaml.Marshal(crd)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "prometheuses-mutated.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkCommand runs, per pair, what a CI job runs: upstream's validator
// the simplest way (read both files, parse them into typed CRDs with
// sigs.k8s.io/yaml, compare once) and our whole `kapp tools
// crd-upgrade-safety -f OLD --file2 NEW` (reading, decoding, the comparison,
// the apiserver's validation of both CRDs, the report):
// BenchmarkCommand/pair=<name>/engine=upstream|ours. hack/bench.sh prints
// ours/upstream per pair.
func BenchmarkCommand(b *testing.B) {
	dir := crdDir(b)
	for _, p := range commandPairs(b) {
		old, new := p.old, p.new
		if !filepath.IsAbs(old) {
			old = filepath.Join(dir, old)
		}
		if !filepath.IsAbs(new) {
			new = filepath.Join(dir, new)
		}
		for _, f := range []string{old, new} {
			if _, err := os.Stat(f); err != nil {
				b.Skipf("%s (%v)", fetchCRDsHint, err)
			}
		}
		b.Run("pair="+p.name, func(b *testing.B) {
			b.Run("engine=upstream", func(b *testing.B) {
				v := newUpstreamValidator()
				b.ReportAllocs()
				for b.Loop() {
					o, n := parseFile(b, old), parseFile(b, new)
					_ = v.Validate(*o, *n)
				}
			})
			// validation-floor: the apiserver's own validation of the update
			// of the old CRD to the new one, alone (apiextensions-apiserver's
			// ValidateCustomResourceDefinitionUpdate through
			// apivalidation.ValidateCRD, on CRDs already decoded): work the
			// whole command cannot skip while apiserverRejects is enabled, so
			// a lower bound of "ours" (one call of the apiserver's library,
			// which runs on one core).
			o, n := parseFile(b, old), parseFile(b, new)
			b.Run("engine=validation-floor", func(b *testing.B) {
				// The garbage collector's target the command sets for
				// these inputs, so that the floor is one.
				defer debug.SetGCPercent(debug.SetGCPercent(tools.GCPercentFor(fileSize(b, old) + fileSize(b, new))))
				b.ReportAllocs()
				for b.Loop() {
					_ = apivalidation.ValidateCRD(context.Background(), o, n)
				}
			})
			// ours: the whole command. ours-compare: the same work as
			// upstream's, the apiserver's validation of both CRDs
			// (apiserverRejects, which upstream has no counterpart of)
			// turned off by a kapp Config.
			for _, v := range []struct {
				engine string
				extra  []string
			}{{"ours", nil}, {"ours-compare", []string{noValidationConfig(b)}}} {
				b.Run("engine="+v.engine, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						o := tools.NewCRDUpgradeSafetyOptions(ui.NewNoopUI(), nil)
						o.FileFlags = tools.CRDUpgradeSafetyFileFlags{OldFiles: []string{old}, NewFiles: append([]string{new}, v.extra...)}
						var unsafe *evaluation.UnsafeUpgradeError
						if err := o.Run(); err != nil && !errors.As(err, &unsafe) {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

func fileSize(tb testing.TB, path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return int(fi.Size())
}

// noValidationConfig writes a kapp Config turning the apiserverRejects
// check off to a file.
func noValidationConfig(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "no-validation.yaml")
	conf := `apiVersion: kapp.k14s.io/v1alpha1
kind: Config
preflightRules:
- name: CRDUpgradeSafety
  config:
    checks:
      crd:
        apiserverRejects: {enabled: false}
`
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func parseFile(tb testing.TB, path string) *apiextv1.CustomResourceDefinition {
	bs, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.Unmarshal(bs, &crd); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return &crd
}

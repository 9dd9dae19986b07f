// Package bench benchmarks our CRDUpgradeSafety engine
// (github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety) side by
// side with upstream kapp v0.66.0's validator
// (carvel.dev/kapp/pkg/kapp/crdupgradesafety), in one `go test -bench` run,
// on large real CRD pairs and on synthetic schemas of growing size.
//
// Real CRDs come from <repo>/.cache/crds, populated by hack/fetch-crds.sh
// (override the folder with KAPP_BENCH_CRDS). hack/bench.sh runs everything
// and prints a summary table.
//
//	hack/fetch-crds.sh
//	cd hack/bench && go test -run '^$' -bench . -benchmem -count=5
package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	upstream "carvel.dev/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	ours "github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const fetchCRDsHint = "real CRDs not found: run hack/fetch-crds.sh first (it fills <repo>/.cache/crds)"

// newUpstreamValidator builds upstream's validator exactly as upstream's
// NewPreflight does (carvel.dev/kapp@v0.66.0/pkg/kapp/crdupgradesafety/preflight.go),
// with the same validations in the same order.
func newUpstreamValidator() *upstream.Validator {
	return &upstream.Validator{
		Validations: []upstream.Validation{
			upstream.NewValidationFunc("NoScopeChange", upstream.NoScopeChange),
			upstream.NewValidationFunc("NoStoredVersionRemoved", upstream.NoStoredVersionRemoved),
			upstream.NewValidationFunc("NoExistingFieldRemoved", upstream.NoExistingFieldRemoved),
			&upstream.ChangeValidator{
				Validations: []upstream.ChangeValidation{
					upstream.EnumChangeValidation,
					upstream.RequiredFieldChangeValidation,
					upstream.MinimumChangeValidation,
					upstream.MinimumItemsChangeValidation,
					upstream.MinimumLengthChangeValidation,
					upstream.MinimumPropertiesChangeValidation,
					upstream.MaximumChangeValidation,
					upstream.MaximumLengthChangeValidation,
					upstream.MaximumItemsChangeValidation,
					upstream.MaximumPropertiesChangeValidation,
					upstream.DefaultValueChangeValidation,
				},
			},
		},
	}
}

// crdDir returns the folder of real CRDs, or skips when it is absent.
func crdDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("KAPP_BENCH_CRDS")
	if dir == "" {
		// go test runs in the package's folder, <repo>/hack/bench.
		dir = filepath.Join("..", "..", ".cache", "crds")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		tb.Skipf("%s (no folder %s)", fetchCRDsHint, dir)
	}
	return dir
}

// readCRD parses a real CRD (path relative to the CRD folder). Every call
// parses the file again, so old and new never share memory: neither engine
// can take a pointer-equality shortcut.
func readCRD(tb testing.TB, rel string) *apiextv1.CustomResourceDefinition {
	tb.Helper()
	path := filepath.Join(crdDir(tb), rel)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		tb.Skipf("%s (%s is missing)", fetchCRDsHint, rel)
	}
	if err != nil {
		tb.Fatalf("reading %s: %v", path, err)
	}
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		tb.Fatalf("parsing %s: %v", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		tb.Fatalf("%s: kind %q, want CustomResourceDefinition", path, crd.Kind)
	}
	return &crd
}

// mutatePrometheuses changes every version of the prometheuses CRD: with
// removeField it removes ^.spec.enableAdminAPI (a field removal), with
// tighten it adds minimum: 1 to ^.spec.replicas, which had none (a bound
// tightened).
func mutatePrometheuses(tb testing.TB, crd *apiextv1.CustomResourceDefinition, removeField, tighten bool) {
	tb.Helper()
	for i := range crd.Spec.Versions {
		v := crd.Spec.Versions[i]
		spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if !ok {
			tb.Fatalf("prometheuses %s: no ^.spec", v.Name)
		}
		if removeField {
			if _, ok := spec.Properties["enableAdminAPI"]; !ok {
				tb.Fatalf("prometheuses %s: no ^.spec.enableAdminAPI", v.Name)
			}
			delete(spec.Properties, "enableAdminAPI")
		}
		if tighten {
			replicas, ok := spec.Properties["replicas"]
			if !ok || replicas.Minimum != nil {
				tb.Fatalf("prometheuses %s: want ^.spec.replicas without a minimum", v.Name)
			}
			one := 1.0
			replicas.Minimum = &one
			spec.Properties["replicas"] = replicas
		}
		v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
}

// realPair is one old/new pair of real CRDs.
type realPair struct {
	name     string
	old, new func(testing.TB) *apiextv1.CustomResourceDefinition
}

func crdFile(rel string) func(testing.TB) *apiextv1.CustomResourceDefinition {
	return func(tb testing.TB) *apiextv1.CustomResourceDefinition { return readCRD(tb, rel) }
}

const (
	prometheusesFile = "prometheus-operator/monitoring.coreos.com_prometheuses.yaml"
	httproutesFile   = "gateway.networking.k8s.io_httproutes.yaml"
)

// realPairs are the pairs of BenchmarkRealPairs, in order. Names must not
// contain '/' or '=' (hack/bench.sh parses them).
var realPairs = []realPair{
	{"prometheuses-self", crdFile(prometheusesFile), crdFile(prometheusesFile)},
	{"prometheuses-mutated", crdFile(prometheusesFile), func(tb testing.TB) *apiextv1.CustomResourceDefinition {
		crd := readCRD(tb, prometheusesFile)
		mutatePrometheuses(tb, crd, true, true)
		return crd
	}},
	{"alertmanagers-self",
		crdFile("prometheus-operator/monitoring.coreos.com_alertmanagers.yaml"),
		crdFile("prometheus-operator/monitoring.coreos.com_alertmanagers.yaml")},
	{"thanosrulers-self",
		crdFile("prometheus-operator/monitoring.coreos.com_thanosrulers.yaml"),
		crdFile("prometheus-operator/monitoring.coreos.com_thanosrulers.yaml")},
	{"httproutes-std-to-exp",
		crdFile(filepath.Join("gateway-api", "standard", httproutesFile)),
		crdFile(filepath.Join("gateway-api", "experimental", httproutesFile))},
	{"certificates-self",
		crdFile("cert-manager/cert-manager.io_certificates.yaml"),
		crdFile("cert-manager/cert-manager.io_certificates.yaml")},
}

// BenchmarkRealPairs runs upstream's validator and our Compare on the same
// real CRD pairs, one after the other, in the same process:
// BenchmarkRealPairs/pair=<name>/engine=upstream|ours.
func BenchmarkRealPairs(b *testing.B) {
	crdDir(b)
	for _, p := range realPairs {
		b.Run("pair="+p.name, func(b *testing.B) {
			old, new := p.old(b), p.new(b)
			b.Run("engine=upstream", func(b *testing.B) {
				v := newUpstreamValidator()
				b.ReportAllocs()
				for b.Loop() {
					_ = v.Validate(*old, *new)
				}
			})
			b.Run("engine=ours", func(b *testing.B) {
				cfg := config.Default()
				b.ReportAllocs()
				for b.Loop() {
					ours.Compare(old, new, &cfg)
				}
			})
		})
	}
}

// linearitySizes are the property counts of BenchmarkLinearity. Upstream
// runs only up to upstreamMaxN, to keep the run short.
var linearitySizes = []int{100, 1000, 10000, 100000}

const upstreamMaxN = 10000

// BenchmarkLinearity compares synthetic one-version CRDs of n properties
// (a nested tree, see synthCRD) with separately built copies of themselves,
// and reports the cost per property (ns/prop, B/prop):
// BenchmarkLinearity/N=<n>/engine=ours|upstream.
func BenchmarkLinearity(b *testing.B) {
	for _, n := range linearitySizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			old, new := synthCRD(n), synthCRD(n)
			if got := countProperties(old.Spec.Versions[0].Schema.OpenAPIV3Schema); got != n {
				b.Fatalf("synthetic schema has %d properties, want %d", got, n)
			}
			cfg := config.Default()
			if fs := ours.Compare(old, new, &cfg); len(fs) != 0 {
				b.Fatalf("ours: self-compare of a synthetic CRD: want no findings, got %d, first: %+v", len(fs), fs[0])
			}
			b.Run("engine=ours", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					ours.Compare(old, new, &cfg)
				}
				reportPerProperty(b, n)
			})
			if n > upstreamMaxN {
				return
			}
			b.Run("engine=upstream", func(b *testing.B) {
				v := newUpstreamValidator()
				b.ReportAllocs()
				for b.Loop() {
					_ = v.Validate(*old, *new)
				}
				reportPerProperty(b, n)
			})
		})
	}
}

// reportPerProperty adds ns/prop and B/prop to a finished benchmark loop.
func reportPerProperty(b *testing.B, n int) {
	if b.N == 0 {
		return
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/prop")
}

// synthCRD builds a one-version CRD whose ^.spec is a nested tree of
// exactly n properties: breadth first, every object gets up to 8 children,
// 3 of them objects and 5 typed leaves with the keywords real CRDs use
// (descriptions, enums, bounds, patterns, defaults, formats, arrays,
// int-or-string, required lists). The tree's depth grows like log(n), as in
// real CRDs. Every call builds fresh memory.
func synthCRD(n int) *apiextv1.CustomResourceDefinition {
	spec := apiextv1.JSONSchemaProps{Type: "object", Description: "spec of the synthetic resource"}
	built := 0
	// Objects are filled breadth first; children are assigned into their
	// parent's map once complete, since maps hold values.
	type pending struct {
		s    *apiextv1.JSONSchemaProps
		path string
	}
	queue := []pending{{&spec, "spec"}}
	var all []pending // in creation order, to wire children bottom up
	all = append(all, queue[0])
	children := map[*apiextv1.JSONSchemaProps][]*apiextv1.JSONSchemaProps{}
	names := map[*apiextv1.JSONSchemaProps][]string{}
	for len(queue) > 0 && built < n {
		parent := queue[0]
		queue = queue[1:]
		for i := 0; i < 8 && built < n; i++ {
			name := fmt.Sprintf("f%d", built)
			var child *apiextv1.JSONSchemaProps
			switch i {
			case 0, 3, 6:
				child = &apiextv1.JSONSchemaProps{
					Type:        "object",
					Description: fmt.Sprintf("%s.%s groups settings of the synthetic resource.", parent.path, name),
				}
				p := pending{child, parent.path + "." + name}
				queue = append(queue, p)
				all = append(all, p)
			default:
				child = synthLeaf(built, parent.path+"."+name)
			}
			built++
			children[parent.s] = append(children[parent.s], child)
			names[parent.s] = append(names[parent.s], name)
		}
	}
	// Wire children into parents, deepest objects first, so each parent
	// copies complete children.
	for i := len(all) - 1; i >= 0; i-- {
		s := all[i].s
		cs := children[s]
		if len(cs) == 0 {
			continue
		}
		s.Properties = make(map[string]apiextv1.JSONSchemaProps, len(cs))
		for j, c := range cs {
			s.Properties[names[s][j]] = *c
			if j%4 == 1 {
				s.Required = append(s.Required, names[s][j])
			}
		}
	}
	return &apiextv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "synthetics.bench.example.com"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "bench.example.com",
			Names: apiextv1.CustomResourceDefinitionNames{
				Plural: "synthetics", Singular: "synthetic", Kind: "Synthetic", ListKind: "SyntheticList",
			},
			Scope: apiextv1.NamespaceScoped,
			Versions: []apiextv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextv1.JSONSchemaProps{
						"apiVersion": {Type: "string"},
						"kind":       {Type: "string"},
						"metadata":   {Type: "object"},
						"spec":       spec,
					},
				}},
			}},
		},
	}
}

// synthLeaf returns the k-th leaf kind (of 5) for property number k.
func synthLeaf(k int, path string) *apiextv1.JSONSchemaProps {
	desc := fmt.Sprintf("%s is synthetic property number %d; it is described at some length, as real CRD fields are.", path, k)
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	switch k % 5 {
	case 0:
		return &apiextv1.JSONSchemaProps{Type: "string", Description: desc,
			Enum:    []apiextv1.JSON{{Raw: []byte(`"Always"`)}, {Raw: []byte(`"Never"`)}, {Raw: []byte(`"IfNotPresent"`)}},
			Default: &apiextv1.JSON{Raw: []byte(`"IfNotPresent"`)}}
	case 1:
		return &apiextv1.JSONSchemaProps{Type: "integer", Format: "int32", Description: desc,
			Minimum: f64(0), Maximum: f64(65535)}
	case 2:
		return &apiextv1.JSONSchemaProps{Type: "string", Description: desc,
			Pattern: `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, MinLength: i64(1), MaxLength: i64(253)}
	case 3:
		return &apiextv1.JSONSchemaProps{Type: "array", Description: desc, MaxItems: i64(16),
			Items:     &apiextv1.JSONSchemaPropsOrArray{Schema: &apiextv1.JSONSchemaProps{Type: "string"}},
			XListType: strPtr("atomic")}
	default:
		return &apiextv1.JSONSchemaProps{Description: desc, XIntOrString: true,
			AnyOf: []apiextv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}}
	}
}

func strPtr(s string) *string { return &s }

// countProperties counts the properties under ^.spec (the synthetic tree).
func countProperties(root *apiextv1.JSONSchemaProps) int {
	var count func(s apiextv1.JSONSchemaProps) int
	count = func(s apiextv1.JSONSchemaProps) int {
		n := 0
		for _, c := range s.Properties {
			n += 1 + count(c)
		}
		return n
	}
	return count(root.Properties["spec"])
}

// TestSanity checks what each engine reports on the real pairs, and prints
// "sanity:" lines for hack/bench.sh (run with -v). Ours must report both
// changes of the mutated prometheuses pair (a removal and a minimum per
// version) and nothing on self-compares; upstream's answers are only
// reported.
func TestSanity(t *testing.T) {
	crdDir(t)
	cfg := config.Default()
	report := func(name string, old, new *apiextv1.CustomResourceDefinition) ([]finding.Finding, string) {
		fs := ours.Compare(old, new, &cfg)
		uerr := newUpstreamValidator().Validate(*old, *new)
		utext := ""
		if uerr != nil {
			utext = uerr.Error()
		}
		t.Logf("sanity: %-22s ours: %s | upstream: %s", name, summarizeOurs(fs), summarizeUpstream(utext))
		return fs, utext
	}
	caught := func(fs []finding.Finding, utext, field string) string {
		o, u := "missed", "missed"
		for _, f := range fs {
			if string(f.Field) == field {
				o = "caught"
			}
		}
		if strings.Contains(utext, field+" ") || strings.Contains(utext, field+"\"") {
			u = "caught"
		}
		return fmt.Sprintf("%s: ours %s, upstream %s", field, o, u)
	}

	for _, p := range realPairs {
		old, new := p.old(t), p.new(t)
		fs, utext := report(p.name, old, new)
		if strings.HasSuffix(p.name, "-self") && len(fs) != 0 {
			t.Errorf("%s: ours: want no findings, got %d: %+v", p.name, len(fs), fs[0])
		}
		if p.name == "prometheuses-mutated" {
			if len(fs) != 2*len(old.Spec.Versions) {
				t.Errorf("%s: ours: want a removal and a minimum per version, got %+v", p.name, fs)
			}
			t.Logf("sanity: %-22s %s; %s", p.name,
				caught(fs, utext, "^.spec.enableAdminAPI"), caught(fs, utext, "^.spec.replicas"))
		}
	}

	// The bound alone: does upstream catch it when no field is removed?
	old, tightened := readCRD(t, prometheusesFile), readCRD(t, prometheusesFile)
	mutatePrometheuses(t, tightened, false, true)
	fs, utext := report("prometheuses-min-only", old, tightened)
	t.Logf("sanity: %-22s %s", "prometheuses-min-only", caught(fs, utext, "^.spec.replicas"))
}

// summarizeOurs renders findings as "N findings (check@field, ...)",
// deduplicated across versions.
func summarizeOurs(fs []finding.Finding) string {
	if len(fs) == 0 {
		return "no findings"
	}
	seen := map[string]bool{}
	var keys []string
	for _, f := range fs {
		k := f.Check
		if f.Field != "" {
			k += "@" + string(f.Field)
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if len(keys) > 3 {
		keys = append(keys[:3], fmt.Sprintf("+%d more", len(keys)-3))
	}
	return fmt.Sprintf("%d findings (%s)", len(fs), strings.Join(keys, ", "))
}

// upstreamPrefix starts every top-level line of upstream's joined error:
// `CustomResourceDefinition <name> failed upgrade safety validation. "<V>" validation failed: `.
const upstreamPrefix = " failed upgrade safety validation. "

// summarizeUpstream renders upstream's error text as "N errors (V: gist,
// ...)": one error per line, the CRD name dropped.
func summarizeUpstream(text string) string {
	if text == "" {
		return "no errors"
	}
	var gist []string
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		n++
		if i := strings.Index(l, upstreamPrefix); i >= 0 {
			l = l[i+len(upstreamPrefix):]
			l = strings.Replace(strings.TrimPrefix(l, `"`), `" validation failed: `, ": ", 1)
		}
		if len(l) > 120 {
			l = l[:117] + "..."
		}
		gist = append(gist, l)
	}
	if len(gist) > 3 {
		gist = append(gist[:3], fmt.Sprintf("+%d more", len(gist)-3))
	}
	return fmt.Sprintf("%d errors (%s)", n, strings.Join(gist, "; "))
}

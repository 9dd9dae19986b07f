package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// schemaCase is one row of a property check's table: an old and a new
// schema of the field ^.spec.x (YAML), an optional config change, and the
// findings expected as "check field: message" lines.
type schemaCase struct {
	name     string
	old, new string
	config   func(*config.Settings)
	want     []string
}

func runSchemaCases(t *testing.T, cases []schemaCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertFindings(t, crdWithField(t, tc.old), crdWithField(t, tc.new), tc.config, tc.want)
		})
	}
}

// assertFindings compares old with new under the default config changed by
// configure (when set) and checks the rendered findings are want.
func assertFindings(t *testing.T, old, new *apiextv1.CustomResourceDefinition, configure func(*config.Settings), want []string) {
	t.Helper()
	cfg := config.Default()
	if configure != nil {
		configure(&cfg)
	}
	if got := render(Compare(old, new, &cfg)); !equalLines(got, want) {
		t.Fatalf("findings differ\n got: %q\nwant: %q", got, want)
	}
}

// crdWithField builds a one-version CRD whose spec has the property x with
// the given schema (YAML).
func crdWithField(t *testing.T, fieldYAML string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	return oracleCRD(t, specX(fieldYAML), false)
}

// render turns findings into "severity check version field: message" lines.
func render(fs []finding.Finding) []string {
	out := []string{}
	for _, f := range fs {
		line := string(f.Severity) + " " + f.Check + " " + testVersionText(f) + " " + string(f.Field) + f.CRDField + ": " + testMessage(f)
		out = append(out, line)
	}
	return out
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// oracleCRD is a one-version CRD with the given root schema (YAML).
func oracleCRD(tb testing.TB, root string, keepAll bool) *apiextv1.CustomResourceDefinition {
	tb.Helper()
	var s apiextv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(root), &s); err != nil {
		tb.Fatalf("parsing schema %q: %v", root, err)
	}
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: testCRDName},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextv1.NamespaceScoped,
			Names:                 apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			PreserveUnknownFields: keepAll,
			Versions: []apiextv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &s},
			}},
		},
	}
}

// specX is a root schema whose spec has the property x with the given
// schema (YAML).
func specX(x string) string {
	return `{type: object, properties: {metadata: {type: object}, spec: {type: object, properties: {x: ` + x + `}}}}`
}

// renderMessage composes a finding's message as the outputs do: set by
// render_test.go (package crdupgradesafety_test) to pkg/kapp/report's
// Message, which this package's own tests cannot import.
var renderMessage func(finding.Finding) string

// testMessage is a finding's message as the outputs print it.
func testMessage(f finding.Finding) string {
	if renderMessage == nil {
		panic("renderMessage is not set: render_test.go sets it")
	}
	return renderMessage(f)
}

// testVersionText is the version of a finding, "v1 -> v2" for a pair.
func testVersionText(f finding.Finding) string {
	if f.PairVersion != "" {
		return f.Version + " -> " + f.PairVersion
	}
	return f.Version
}

// childPath and splitCombinators are schemapath's, on strings, for the
// proofs that build paths from data.
func childPath(parent, name string) string { return string(schemapath.Path(parent).Child(name)) }

func splitCombinators(field string) (string, string) {
	base, stripped := schemapath.Path(field).SplitCombinators()
	return string(base), string(stripped)
}

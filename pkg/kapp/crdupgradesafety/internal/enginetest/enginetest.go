package enginetest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const TestCRDName = "widgets.example.com"

// testVersion is one version of a CRD built by newCRD. spec is the YAML
// schema of the version's .spec property; "" means {type: object}.
type TestVersion struct {
	Name            string
	Served, Storage bool
	Spec            string
}

// newCRD builds the namespaced CRD widgets.example.com with the given
// versions, each with a root schema of apiVersion, kind, metadata and spec.
func NewCRD(t *testing.T, versions ...TestVersion) *apiextv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: TestCRDName},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
		},
	}
	for _, v := range versions {
		spec := apiextv1.JSONSchemaProps{Type: "object"}
		if v.Spec != "" {
			spec = apiextv1.JSONSchemaProps{}
			if err := yaml.Unmarshal([]byte(v.Spec), &spec); err != nil {
				t.Fatalf("parsing spec schema %q: %v", v.Spec, err)
			}
		}
		crd.Spec.Versions = append(crd.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{
			Name: v.Name, Served: v.Served, Storage: v.Storage,
			Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextv1.JSONSchemaProps{
					"apiVersion": {Type: "string"},
					"kind":       {Type: "string"},
					"metadata":   {Type: "object"},
					"spec":       spec,
				},
			}},
		})
	}
	return crd
}

// with applies edits to a CRD and returns it, for use in case tables.
func With(crd *apiextv1.CustomResourceDefinition, edits ...func(*apiextv1.CustomResourceDefinition)) *apiextv1.CustomResourceDefinition {
	for _, e := range edits {
		e(crd)
	}
	return crd
}

func WithScope(s apiextv1.ResourceScope) func(*apiextv1.CustomResourceDefinition) {
	return func(c *apiextv1.CustomResourceDefinition) { c.Spec.Scope = s }
}

func WithStoredVersions(vs ...string) func(*apiextv1.CustomResourceDefinition) {
	return func(c *apiextv1.CustomResourceDefinition) { c.Status.StoredVersions = vs }
}

// trimmedBy records, as the apiserver does in managedFields, that manager
// last wrote status.storedVersions through the status subresource.
func TrimmedBy(manager string) func(*apiextv1.CustomResourceDefinition) {
	return func(c *apiextv1.CustomResourceDefinition) {
		at := metav1.NewTime(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
		c.ManagedFields = append(c.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apiextensions.k8s.io/v1",
			Time: &at, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:storedVersions":{}}}`),
		})
	}
}

func WebhookConversion(c *apiextv1.CustomResourceDefinition) {
	c.Spec.Conversion = &apiextv1.CustomResourceConversion{
		Strategy: apiextv1.WebhookConverter,
		Webhook: &apiextv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig:             &apiextv1.WebhookClientConfig{URL: Ptr("https://conversion.example.com")},
		},
	}
}

// crdWithField builds a one-version CRD whose spec has the property x with
// the given schema (YAML).
func CRDWithField(t *testing.T, fieldYAML string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	return OracleCRD(t, SpecX(fieldYAML), false)
}

// render turns findings into "severity check version field: message" lines.
func Render(fs []finding.Finding) []string {
	out := []string{}
	for _, f := range fs {
		line := string(f.Severity) + " " + f.Check + " " + VersionText(f) + " " + string(f.Field) + f.CRDField + ": " + Message(f)
		out = append(out, line)
	}
	return out
}

func EqualLines(a, b []string) bool {
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
func OracleCRD(tb testing.TB, root string, keepAll bool) *apiextv1.CustomResourceDefinition {
	tb.Helper()
	var s apiextv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(root), &s); err != nil {
		tb.Fatalf("parsing schema %q: %v", root, err)
	}
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: TestCRDName},
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
func SpecX(x string) string {
	return `{type: object, properties: {metadata: {type: object}, spec: {type: object, properties: {x: ` + x + `}}}}`
}

// RenderMessage composes a finding's message as the outputs do
// (report.Message); a test may swap it to show that no decision reads
// the words.
var RenderMessage = report.Message

// Message is a finding's message as the outputs print it.
func Message(f finding.Finding) string { return RenderMessage(f) }

// testVersionText is the version of a finding, "v1 -> v2" for a pair.
func VersionText(f finding.Finding) string {
	if f.PairVersion != "" {
		return f.Version + " -> " + f.PairVersion
	}
	return f.Version
}

// childPath and splitCombinators are schemapath's, on strings, for the
// proofs that build paths from data.
func ChildPath(parent, name string) string { return string(schemapath.Path(parent).Child(name)) }

func SplitCombinators(field string) (string, string) {
	base, stripped := schemapath.Path(field).SplitCombinators()
	return string(base), string(stripped)
}

// Real CRDs are not committed: hack/fetch-crds.sh copies them from the Go
// modules that ship them (prometheus-operator, cert-manager, gateway-api)
// into the git-ignored .cache/crds/ of the repository.
const FetchCRDsHint = "real CRDs not found in .cache/crds/: run hack/fetch-crds.sh first"

const PrometheusesCRD = "prometheus-operator/monitoring.coreos.com_prometheuses.yaml"

// realCRDDir returns <repo>/.cache/crds, or skips the test when it is absent.
func RealCRDDir(tb testing.TB) string {
	tb.Helper()
	crds, ok := RealCRDDirIfPresent(tb)
	if !ok {
		tb.Skip(FetchCRDsHint)
	}
	return crds
}

// realCRDDirIfPresent returns <repo>/.cache/crds and whether it exists.
func RealCRDDirIfPresent(tb testing.TB) (string, bool) {
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
func ReadRealCRD(tb testing.TB, rel string) ([]byte, *apiextv1.CustomResourceDefinition) {
	tb.Helper()
	path := filepath.Join(RealCRDDir(tb), rel)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		tb.Skipf("%s: %s is missing", FetchCRDsHint, rel)
	}
	if err != nil {
		tb.Fatalf("reading %s: %v", path, err)
	}
	return b, ParseRealCRD(tb, path, b)
}

func ParseRealCRD(tb testing.TB, path string, b []byte) *apiextv1.CustomResourceDefinition {
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
func RealCRDFiles(tb testing.TB) []string {
	tb.Helper()
	files := RealCRDFilesIn(tb, RealCRDDir(tb))
	if len(files) == 0 {
		tb.Skip(FetchCRDsHint)
	}
	return files
}

// realCRDFilesIn lists the YAML files under root (relative paths, sorted).
func RealCRDFilesIn(tb testing.TB, root string) []string {
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

func Widget(version, namespace, name string, spec map[string]any) map[string]any {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return map[string]any{"apiVersion": "example.com/" + version, "kind": "Widget", "metadata": meta, "spec": spec}
}

// loose is crd with every version's spec schema replaced by one that
// accepts any spec.
func Loose(crd *apiextv1.CustomResourceDefinition) *apiextv1.CustomResourceDefinition {
	out := crd.DeepCopy()
	for _, v := range out.Spec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			v.Schema.OpenAPIV3Schema.Properties["spec"] = apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: Ptr(true)}
		}
	}
	return out
}

func Ptr[T any](v T) *T { return &v }

// schemaValidator is the apiserver's OpenAPI schema validator of a schema
// (YAML), as it validates custom resources.
func SchemaValidator(t *testing.T, schemaYAML string) validation.SchemaValidator {
	t.Helper()
	var v1 apiextv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(schemaYAML), &v1); err != nil {
		t.Fatal(err)
	}
	return SchemaValidatorOf(t, &v1)
}

// schemaValidatorOf is the apiserver's validator of a v1 schema.
func SchemaValidatorOf(t *testing.T, v1 *apiextv1.JSONSchemaProps) validation.SchemaValidator {
	t.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, internal, nil); err != nil {
		t.Fatal(err)
	}
	v, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ReadFile(tb testing.TB, dir, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		tb.Fatalf("reading case file: %v", err)
	}
	return b
}

// parseCRDStrict parses a CRD file and rejects unknown fields, so that a
// typo in a case (propertise:, x-kubernetes-int-or-strin:) fails loudly
// instead of silently testing nothing.
func ParseCRDStrict(tb testing.TB, path string, b []byte) *apiextv1.CustomResourceDefinition {
	tb.Helper()
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		tb.Fatalf("parsing %s: %v", path, err)
	}
	if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" {
		tb.Fatalf("%s: want an apiextensions.k8s.io/v1 CustomResourceDefinition, got %s %s", path, crd.APIVersion, crd.Kind)
	}
	return &crd
}

// goldenLine renders a finding as one line of expected.txt:
//
//	<severity> <check> <version> <field>: <message>
//
// with "-" for the version and field of CRD-level findings.
func GoldenLine(f finding.Finding) string {
	version, field := VersionText(f), string(f.Field)+f.CRDField
	if version == "" {
		version = "-"
	}
	if field == "" {
		field = "-"
	}
	line := string(f.Severity) + " " + f.Check + " " + version + " " + field + ": " + Message(f)
	if f.Severity == finding.SeverityError && f.Remedy == nil {
		line += " (no remedy)"
	}
	return line + " [fp:" + f.Fingerprint + "]"
}

func GoldenText(fs []finding.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(GoldenLine(f))
		b.WriteByte('\n')
	}
	return b.String()
}

func ToggleOff(id string) func(*config.Settings) {
	return func(c *config.Settings) { c.Checks.SameVersion.Toggles[id] = false }
}

// withStatus gives every version of crd the .status schema status (YAML;
// "" adds none) and, with subresource, the status subresource.
func WithStatus(t *testing.T, crd *apiextv1.CustomResourceDefinition, status string, subresource bool) *apiextv1.CustomResourceDefinition {
	t.Helper()
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if status != "" {
			var s apiextv1.JSONSchemaProps
			require.NoError(t, yaml.Unmarshal([]byte(status), &s))
			v.Schema.OpenAPIV3Schema.Properties["status"] = s
		}
		if subresource {
			v.Subresources = &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}}
		}
	}
	return crd
}

// farFuture is an expiry date no test reaches.
var FarFuture = time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)

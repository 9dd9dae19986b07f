package apivalidation

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// quadraticCEL is a rule whose estimated cost is over the apiserver's
// per-expression budget: a comparison of every pair of items of a list with
// no maxItems, of strings with no maxLength.
const quadraticCEL = `
type: object
properties:
  names:
    type: array
    items: {type: string}
    x-kubernetes-validations:
    - rule: "self.all(x, self.all(y, x == y || x != y))"
`

// overBudgetCEL is a rule 4x over the per-expression budget (1,000 strings
// of up to 100,000 characters each matched against a regex), while the
// schema's total stays under the CRD's budget.
const overBudgetCEL = `
type: object
properties:
  names:
    type: array
    maxItems: 1000
    items: {type: string, maxLength: 100000}
    x-kubernetes-validations:
    - rule: "self.all(x, x.matches('^a+$'))"
`

func TestValidateCRD(t *testing.T) {
	v1 := func(spec string) *apiextv1.CustomResourceDefinition {
		return enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: spec})
	}
	stored := func(versions ...string) func(*apiextv1.CustomResourceDefinition) {
		return func(c *apiextv1.CustomResourceDefinition) { c.Status.StoredVersions = versions }
	}
	established := func(c *apiextv1.CustomResourceDefinition) {
		c.Status.Conditions = []apiextv1.CustomResourceDefinitionCondition{
			{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}
	}
	cases := []struct {
		name     string
		old, new *apiextv1.CustomResourceDefinition // old nil: a create
		// want are the rejected field paths, each with a piece of its message.
		want []string
	}{
		{name: "valid create", new: v1("")},
		{name: "defaulted before validation: no singular, listKind or conversion",
			new: enginetest.With(v1(""), func(c *apiextv1.CustomResourceDefinition) {
				c.Spec.Names.Singular, c.Spec.Names.ListKind, c.Spec.Conversion = "", "", nil
			})},
		{name: "not structural: a property without type",
			new:  v1("type: object\nproperties:\n  size: {minimum: 1}\n"),
			want: []string{"spec.versions[*].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value"}},
		{name: "additionalProperties false beside properties",
			new:  v1("type: object\nproperties:\n  a: {type: string}\nadditionalProperties: false\n"),
			want: []string{"spec.versions[*].schema.openAPIV3Schema.properties[spec].additionalProperties: Forbidden"}},
		{name: "CEL rule that does not compile",
			new:  v1("type: object\nx-kubernetes-validations:\n- rule: \"self.nope(\"\n"),
			want: []string{"x-kubernetes-validations[0].rule: Invalid value"}},
		{name: "CEL rule over the cost budget",
			new: v1(quadraticCEL),
			want: []string{"x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget",
				"x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit",
				"spec.versions[*].schema.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget"}},
		{name: "name is not plural.group",
			new:  enginetest.With(v1(""), func(c *apiextv1.CustomResourceDefinition) { c.Name = "gadgets.example.com" }),
			want: []string{`metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group`}},
		{name: "two storage versions",
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true},
				enginetest.TestVersion{Name: "v2", Served: true, Storage: true}),
			want: []string{"must have exactly one version marked as storage version",
				`status.storedVersions: Invalid value: ["v1"]: must have the storage version v2`}},
		{name: "valid update", old: v1(""), new: v1("type: object\nproperties:\n  a: {type: string}\n")},
		{name: "stored version dropped while in status.storedVersions",
			old: enginetest.With(enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true}, enginetest.TestVersion{Name: "v2", Served: true, Storage: true}),
				stored("v1", "v2"), established),
			new:  enginetest.NewCRD(t, enginetest.TestVersion{Name: "v2", Served: true, Storage: true}),
			want: []string{`status.storedVersions[0]: Invalid value: "v1": missing from spec.versions`}},
		{name: "stored version dropped, old from a file: its storage version counts as stored",
			old:  enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true}),
			new:  enginetest.NewCRD(t, enginetest.TestVersion{Name: "v2", Served: true, Storage: true}),
			want: []string{`status.storedVersions[0]: Invalid value: "v1": missing from spec.versions`}},
		{name: "scope of an established CRD is immutable",
			old:  enginetest.With(v1(""), stored("v1"), established),
			new:  enginetest.With(v1(""), func(c *apiextv1.CustomResourceDefinition) { c.Spec.Scope = apiextv1.ClusterScoped }),
			want: []string{"spec.scope: Invalid value: \"Cluster\": field is immutable"}},
		{name: "names.kind of an old CRD from a file (taken as established) is immutable",
			old:  v1(""),
			new:  enginetest.With(v1(""), func(c *apiextv1.CustomResourceDefinition) { c.Spec.Names.Kind = "Gizmo" }),
			want: []string{"spec.names.kind: Invalid value: \"Gizmo\": field is immutable"}},
		{name: "scope of a CRD not established yet may change",
			old: enginetest.With(v1(""), stored("v1"), func(c *apiextv1.CustomResourceDefinition) {
				c.Status.Conditions = []apiextv1.CustomResourceDefinitionCondition{
					{Type: apiextv1.Established, Status: apiextv1.ConditionFalse}}
			}),
			new: enginetest.With(v1(""), func(c *apiextv1.CustomResourceDefinition) { c.Spec.Scope = apiextv1.ClusterScoped })},
		{name: "create: a CEL rule over the per-expression budget",
			new:  v1(overBudgetCEL),
			want: []string{"x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 4.0x"}},
		{name: "update ratchets: the rule is kept in a version whose schema is unchanged",
			old: enginetest.With(v1(overBudgetCEL), stored("v1"), established),
			new: enginetest.With(v1(overBudgetCEL), func(c *apiextv1.CustomResourceDefinition) {
				c.Spec.Names.ShortNames = []string{"wd"}
			})},
		{name: "update: changing the schema of that version is refused",
			old: enginetest.With(v1(overBudgetCEL), stored("v1"), established),
			new: enginetest.With(v1(overBudgetCEL), func(c *apiextv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["names"].Items.Schema.Description = "edited"
			}),
			want: []string{"x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 4.0x"}},
		{name: "update: a new CEL rule over budget is refused",
			old: enginetest.With(v1(""), stored("v1"), established),
			new: v1(quadraticCEL),
			want: []string{"spec.versions[*].schema.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget",
				"x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit",
				"spec.versions[*].schema.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateCRD(context.Background(), tc.old, tc.new)
			got := make([]string, len(errs))
			for i, e := range errs {
				got[i] = V1FieldPath(e.Field) + ": " + e.ErrorBody()
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n got: %q\nwant: %q", len(got), len(tc.want), got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("error %d is %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// TestValidateCRDLeavesInputsAlone: validation works on copies.
func TestValidateCRDLeavesInputsAlone(t *testing.T) {
	old := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true})
	new := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true})
	new.Spec.Names.Singular = ""
	ValidateCRD(context.Background(), old, new)
	if old.Status.Conditions != nil || old.Status.StoredVersions != nil || new.Spec.Names.Singular != "" || new.Spec.Conversion != nil {
		t.Fatalf("inputs changed: old status %+v, new names %+v", old.Status, new.Spec.Names)
	}

	// What the v1 defaulters set: a webhook's port, stored versions.
	webhook := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true})
	webhook.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter,
		Webhook: &apiextv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "ns", Name: "svc"}}}}
	webhook.Status.StoredVersions = make([]string, 0, 4)
	before := webhook.DeepCopy()
	ValidateCRD(context.Background(), nil, webhook)
	ValidateCRD(context.Background(), webhook, webhook)
	if !apiequality.Semantic.DeepEqual(before, webhook) || webhook.Spec.Conversion.Webhook.ClientConfig.Service.Port != nil ||
		len(webhook.Status.StoredVersions[:cap(webhook.Status.StoredVersions)][0]) != 0 {
		t.Fatalf("input changed: %+v", webhook)
	}
}

func TestV1FieldPath(t *testing.T) {
	for in, want := range map[string]string{
		"spec.validation.openAPIV3Schema.properties[a]": "spec.versions[*].schema.openAPIV3Schema.properties[a]",
		"spec.validation":                   "spec.versions[*].schema",
		"spec.subresources.scale":           "spec.versions[*].subresources.scale",
		"spec.additionalPrinterColumns[0]":  "spec.versions[*].additionalPrinterColumns[0]",
		"spec.selectableFields[1].jsonPath": "spec.versions[*].selectableFields[1].jsonPath",
		"spec.validationX":                  "spec.validationX",
		"spec.versions[1].schema":           "spec.versions[1].schema",
		"status.storedVersions[0]":          "status.storedVersions[0]",
		"":                                  "",
	} {
		if got := V1FieldPath(in); got != want {
			t.Errorf("V1FieldPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRejected(t *testing.T) {
	rs := Rejections(field.ErrorList{
		field.Invalid(field.NewPath("spec", "scope"), "Cluster", "field is immutable"),
		field.Required(field.NewPath("spec", "group"), ""),
	})
	cases := []struct {
		name      string
		configure func(*config.Settings)
		want      []string
	}{
		{name: "errors", want: []string{
			`error apiserverRejects  spec.group: the apiserver refuses the update: Required value`,
			`error apiserverRejects  spec.scope: the apiserver refuses the update: Invalid value: "Cluster": field is immutable`,
		}},
		{name: "errors in warn mode too", configure: func(c *config.Settings) { c.Mode = config.ModeWarn },
			want: []string{
				`error apiserverRejects  spec.group: the apiserver refuses the update: Required value`,
				`error apiserverRejects  spec.scope: the apiserver refuses the update: Invalid value: "Cluster": field is immutable`,
			}},
		{name: "an exemption of every check does not waive them",
			configure: func(c *config.Settings) { c.Waivers = []config.Waiver{{CRD: enginetest.TestCRDName}} },
			want: []string{
				`error apiserverRejects  spec.group: the apiserver refuses the update: Required value`,
				`error apiserverRejects  spec.scope: the apiserver refuses the update: Invalid value: "Cluster": field is immutable`,
			}},
		{name: "disabled", configure: func(c *config.Settings) { c.Checks.CRD.ApiserverRejects.Enabled = false },
			want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.configure != nil {
				tc.configure(&cfg)
			}
			if got := enginetest.Render(Rejected(enginetest.TestCRDName, "update", rs, &cfg)); !enginetest.EqualLines(got, tc.want) {
				t.Fatalf("findings differ\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}

func TestInvalidOld(t *testing.T) {
	cfg := config.Default()
	invalid := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: "type: object\nproperties:\n  size: {minimum: 1}\n"})
	got := enginetest.Render(InvalidOld(enginetest.TestCRDName, ValidateCRD(context.Background(), nil, invalid), &cfg))
	want := []string{"warning apiserverRejects  : the old CRD is itself invalid, the apiserver would refuse to create it: " +
		"spec.versions[*].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields"}
	if !enginetest.EqualLines(got, want) {
		t.Fatalf("findings differ\n got: %q\nwant: %q", got, want)
	}
	valid := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true})
	if fs := InvalidOld(enginetest.TestCRDName, ValidateCRD(context.Background(), nil, valid), &cfg); fs != nil {
		t.Fatalf("a valid old CRD gave %v", fs)
	}
}

func TestRejectedMessageIsBounded(t *testing.T) {
	huge := strings.Repeat("é", 10000)
	fs := Rejected(enginetest.TestCRDName, "create", []Rejection{{Field: "spec", Message: huge}}, nil)
	if len(fs) != 1 {
		t.Fatalf("got %d findings", len(fs))
	}
	msg := fs[0].ChangeText
	if len(msg) > finding.MaxMessageBytes || !strings.Contains(msg, " bytes)...") {
		t.Fatalf("message not bounded: %d bytes, ends %q", len(msg), msg[len(msg)-30:])
	}
	if !strings.HasPrefix(msg, "the apiserver refuses the create: éé") {
		t.Fatalf("message lost its start: %q", msg[:50])
	}
}

// TestRealCRDsAreAccepted: the real CRDs of hack/fetch-crds.sh, which the
// apiserver accepts, are accepted on create and on an update to themselves:
// no false alarm.
func TestRealCRDsAreAccepted(t *testing.T) {
	root := enginetest.RealCRDDir(t)
	for _, rel := range enginetest.RealCRDFiles(t) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		crd := enginetest.ParseRealCRD(t, rel, b)
		before := crd.DeepCopy()
		if errs := ValidateCRD(context.Background(), nil, crd); len(errs) > 0 {
			t.Errorf("%s: create refused: %v", rel, errs.ToAggregate())
		}
		if errs := ValidateCRD(context.Background(), crd, crd); len(errs) > 0 {
			t.Errorf("%s: update to itself refused: %v", rel, errs.ToAggregate())
		}
		if !apiequality.Semantic.DeepEqual(before, crd) {
			t.Errorf("%s: the validation changed its input", rel)
		}
	}
}

// BenchmarkValidateCRD validates prometheuses (786 KB), the largest real
// CRD, on create and on an update to itself. Compare with BenchmarkCompare.
func BenchmarkValidateCRD(b *testing.B) {
	_, crd := enginetest.ReadRealCRD(b, enginetest.PrometheusesCRD)
	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			ValidateCRD(context.Background(), nil, crd)
		}
	})
	b.Run("update", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			ValidateCRD(context.Background(), crd, crd)
		}
	})
}

// TestPreparedCRDIsReusable: a prepared CRD goes through any number of
// validations, in any order, each with the result of its own ValidateCRD:
// a create clears the status only for itself (here an update keeps a
// stored version the spec no longer has, which a create does not see).
func TestPreparedCRDIsReusable(t *testing.T) {
	crd := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true})
	crd.Status.StoredVersions = []string{"v0", "v1"}
	ctx := context.Background()
	wantCreate, wantUpdate := ValidateCRD(ctx, nil, crd), ValidateCRD(ctx, crd, crd)
	if len(wantCreate) != 0 || len(wantUpdate) == 0 {
		t.Fatalf("want a create accepted and an update refused, got %v and %v", wantCreate, wantUpdate)
	}
	p := PrepareCRD(crd)
	for i := 0; i < 2; i++ {
		if got := p.Create(ctx); !reflect.DeepEqual(got, wantCreate) {
			t.Fatalf("create %d: got %v, want %v", i, got, wantCreate)
		}
		if got := p.Update(ctx, p); got.ToAggregate().Error() != wantUpdate.ToAggregate().Error() {
			t.Fatalf("update %d: got %v, want %v", i, got, wantUpdate)
		}
	}
}

// TestWarnings: the apiserver's own warnings on an accepted create or
// update (its registry strategy): a list set of objects, an integer format
// it does not recognize; on an update only those the old CRD did not draw.
func TestWarnings(t *testing.T) {
	v1 := func(spec string) *PreparedCRD {
		return PrepareCRD(enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: spec}))
	}
	const setOfObjects = "type: object\nproperties:\n  ports:\n    type: array\n    x-kubernetes-list-type: set\n" +
		"    items: {type: object, properties: {port: {type: integer}}}\n"
	const oddFormat = "type: object\nproperties:\n  size: {type: integer, format: uint8}\n"
	const setWarning = `x-kubernetes-list-type: set for items of type "object" is not supported by server-side apply or CEL validation rules`
	ctx := context.Background()
	cases := []struct {
		name string
		got  []string
		want []string
	}{
		{name: "create: list set of objects", got: v1(setOfObjects).WarningsOnCreate(ctx), want: []string{setWarning}},
		{name: "create: unrecognized format", got: v1(oddFormat).WarningsOnCreate(ctx), want: []string{`unrecognized format "uint8"`}},
		{name: "create: none", got: v1("").WarningsOnCreate(ctx), want: nil},
		{name: "update that adds the list set", got: v1(setOfObjects).WarningsOnUpdate(ctx, v1("")), want: []string{setWarning}},
		{name: "update that keeps it: ratcheted", got: v1(setOfObjects).WarningsOnUpdate(ctx, v1(setOfObjects)), want: nil},
		{name: "update that adds the format", got: v1(oddFormat).WarningsOnUpdate(ctx, v1("")), want: []string{`unrecognized format "uint8"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(tc.got, tc.want) {
				t.Fatalf("warnings differ\n got: %q\nwant: %q", tc.got, tc.want)
			}
		})
	}

	cfg := config.Default()
	got := enginetest.Render(Warned(enginetest.TestCRDName, "update", []string{setWarning}, &cfg))
	want := []string{"warning apiserverRejects  : the apiserver warns on the update: " + setWarning}
	if !enginetest.EqualLines(got, want) {
		t.Fatalf("findings differ\n got: %q\nwant: %q", got, want)
	}
	cfg.Mode = config.ModeError
	cfg.Checks.CRD.ApiserverRejects.Enabled = false
	if fs := Warned(enginetest.TestCRDName, "update", []string{setWarning}, &cfg); fs != nil {
		t.Fatalf("disabled check gave %v", fs)
	}
}

package objects

import (
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// validateExisting reads objs (of any version) under crd as the new CRD,
// with no finding to join them to, after an old CRD that accepts any spec
// (loose): every object the schema rejects is an existingResources finding
// of its own (a rejection no finding explains).
func validateExisting(crd *apiextv1.CustomResourceDefinition, objs []map[string]any, cfg *config.Settings) ([]finding.Finding, error) {
	return validateExistingAfter(enginetest.Loose(crd), crd, objs, cfg)
}

// validateExistingAfter is validateExisting after the old CRD old.
func validateExistingAfter(old, crd *apiextv1.CustomResourceDefinition, objs []map[string]any, cfg *config.Settings) ([]finding.Finding, error) {
	byVersion := map[string][]map[string]any{}
	for _, o := range objs {
		apiVersion, _ := o["apiVersion"].(string)
		v := apiVersion[strings.LastIndex(apiVersion, "/")+1:]
		byVersion[v] = append(byVersion[v], o)
	}
	var impacts []finding.VersionImpact
	for _, v := range crd.Spec.Versions {
		if len(byVersion[v.Name]) == 0 || v.Schema == nil {
			continue
		}
		r, err := NewObjectReader(old, crd, v.Name, finding.SourceCluster, nil, cfg)
		if err != nil {
			return nil, err
		}
		r.Read(byVersion[v.Name])
		impacts = append(impacts, r.Result())
	}
	return finding.ApplyImpacts(nil, impacts, cfg), nil
}

func TestValidateExisting(t *testing.T) {
	const schema = `{type: object, properties: {replicas: {type: integer, maximum: 5}, name: {type: string, maxLength: 3},
		tags: {type: array, maxItems: 1, items: {type: string, enum: [a]}}},
		x-kubernetes-validations: [{rule: "!has(self.replicas) || self.replicas >= 1", message: "at least one replica"}]}`
	crd := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: schema}, enginetest.TestVersion{Name: "v2", Served: true, Storage: false, Spec: `{type: object, properties: {replicas: {type: string}}}`})
	noSchema := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""})
	noSchema.Spec.Versions[0].Schema = nil

	cases := []struct {
		name   string
		objs   []map[string]any
		config func(*config.Settings)
		want   []string
	}{
		{name: "valid objects", objs: []map[string]any{
			enginetest.Widget("v1", "default", "a", map[string]any{"replicas": int64(3), "name": "abc"}),
			enginetest.Widget("v1", "", "b", map[string]any{}),
			enginetest.Widget("v2", "default", "c", map[string]any{"replicas": "three"}),
		}, want: []string{}},
		{name: "invalid under the OpenAPI schema", objs: []map[string]any{
			enginetest.Widget("v1", "default", "a", map[string]any{"replicas": int64(10)}),
		}, want: []string{"error existingResources v1 : existing Widget default/a would be invalid: spec.replicas: Invalid value: 10: spec.replicas in body should be less than or equal to 5; updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused"}},
		{name: "invalid under a CEL rule", objs: []map[string]any{
			enginetest.Widget("v1", "default", "a", map[string]any{"replicas": int64(0)}),
		}, want: []string{"error existingResources v1 : existing Widget default/a would be invalid: spec: Invalid value: at least one replica; updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused"}},
		{name: "invalid under the schema of its own version only", objs: []map[string]any{
			enginetest.Widget("v1", "", "a", map[string]any{"replicas": "three"}),
			enginetest.Widget("v2", "", "b", map[string]any{"replicas": int64(3)}),
		}, want: []string{
			// A type error keeps the apiserver from running the CEL rules.
			`error existingResources v1 : existing Widget a would be invalid: spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"; every write to it is refused, updates included`,
			`error existingResources v2 : existing Widget b would be invalid: spec.replicas: Invalid value: "integer": spec.replicas in body must be of type string: "integer"` + "; updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
		}},
		{name: "many errors are summarized", objs: []map[string]any{
			enginetest.Widget("v1", "ns", "a", map[string]any{"replicas": int64(9), "name": "abcd", "tags": []any{"b", "c"}}),
		}, want: []string{
			`error existingResources v1 : existing Widget ns/a would be invalid: spec.name: Too long: may not be more than 3 bytes; spec.replicas: Invalid value: 9: spec.replicas in body should be less than or equal to 5; spec.tags: Too many: 2: must have at most 1 item; and 2 more; updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused`,
		}},
		{name: "findings sorted, one per invalid object", objs: []map[string]any{
			enginetest.Widget("v1", "ns", "z", map[string]any{"replicas": int64(6)}),
			enginetest.Widget("v1", "ns", "ok", map[string]any{"replicas": int64(1)}),
			enginetest.Widget("v1", "ns", "m", map[string]any{"replicas": int64(7)}),
		}, want: []string{
			"error existingResources v1 : existing Widget ns/m would be invalid: spec.replicas: Invalid value: 7: spec.replicas in body should be less than or equal to 5; updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
			"error existingResources v1 : existing Widget ns/z would be invalid: spec.replicas: Invalid value: 6: spec.replicas in body should be less than or equal to 5; updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
		}},
		{name: "version missing from the new CRD is skipped", objs: []map[string]any{
			enginetest.Widget("v1beta1", "default", "a", map[string]any{"replicas": int64(10)}),
		}, want: []string{}},
		{name: "existingResources disabled", objs: []map[string]any{
			enginetest.Widget("v1", "default", "a", map[string]any{"replicas": int64(10)}),
		}, config: func(c *config.Settings) { c.Checks.CRD.ExistingResources.Enabled = false }, want: []string{}},
		{name: "warn mode", objs: []map[string]any{
			enginetest.Widget("v1", "default", "a", map[string]any{"replicas": int64(10)}),
		}, config: func(c *config.Settings) { c.Mode = config.ModeWarn },
			want: []string{"warning existingResources v1 : existing Widget default/a would be invalid: spec.replicas: Invalid value: 10: spec.replicas in body should be less than or equal to 5; updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused"}},
		{name: "no objects", objs: nil, want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			fs, err := validateExisting(crd, tc.objs, &cfg)
			if err != nil {
				t.Fatalf("ValidateExisting: %v", err)
			}
			if got := enginetest.Render(fs); !enginetest.EqualLines(got, tc.want) {
				t.Fatalf("findings differ\n got: %q\nwant: %q", got, tc.want)
			}
			for _, f := range fs {
				if f.CRD != enginetest.TestCRDName {
					t.Errorf("finding names CRD %q, want %q", f.CRD, enginetest.TestCRDName)
				}
			}
		})
	}

	// An object the old CRD already rejects at the same fields is a note:
	// a warning, whatever unaffectedEnforcement, not a rejection.
	t.Run("already invalid under the old CRD: a note", func(t *testing.T) {
		fs, err := validateExistingAfter(crd, crd, []map[string]any{
			enginetest.Widget("v1", "default", "a", map[string]any{"replicas": int64(10)}),
			enginetest.Widget("v1", "default", "b", map[string]any{"replicas": int64(3)}),
		}, nil)
		want := []string{"warning existingResources v1 : existing Widget default/a is already invalid under the old CRD and still is, which the update does not change: spec.replicas: Invalid value: 10: spec.replicas in body should be less than or equal to 5"}
		if err != nil || !enginetest.EqualLines(enginetest.Render(fs), want) {
			t.Fatalf("got %q, %v; want %q", enginetest.Render(fs), err, want)
		}
		if fs[0].Object == nil || !fs[0].Object.AlreadyInvalid || fs[0].Impact != nil || fs[0].DataLoss {
			t.Fatalf("the note's facts: %+v", fs[0])
		}
	})
	// A status the schema rejects, where the version has the status
	// subresource: only status writes are refused, told as such.
	t.Run("status rejected with the status subresource", func(t *testing.T) {
		withSub := enginetest.WithStatus(t, enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}), `{type: object, properties: {phase: {type: string, enum: [Ready]}}}`, true)
		old := enginetest.WithStatus(t, enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}), `{type: object, properties: {phase: {type: string}}}`, true)
		obj := enginetest.Widget("v1", "default", "a", map[string]any{})
		obj["status"] = map[string]any{"phase": "Pending"}
		fs, err := validateExistingAfter(old, withSub, []map[string]any{obj}, nil)
		want := []string{`error existingResources v1 : existing Widget default/a would have its status writes refused: status.phase: Unsupported value: "Pending": supported values: "Ready"; only writes of the status (its controller's) are refused: a create drops status and an update of the object keeps the stored one; status writes that leave these fields alone still pass (validation ratcheting)`}
		if err != nil || !enginetest.EqualLines(enginetest.Render(fs), want) {
			t.Fatalf("got %q, %v; want %q", enginetest.Render(fs), err, want)
		}
	})
	t.Run("version without a schema is skipped", func(t *testing.T) {
		fs, err := validateExisting(noSchema, []map[string]any{enginetest.Widget("v1", "", "a", map[string]any{"x": int64(1)})}, nil)
		if err != nil || len(fs) != 0 {
			t.Fatalf("got %q, %v; want no findings", enginetest.Render(fs), err)
		}
	})
	t.Run("nil config uses the defaults", func(t *testing.T) {
		fs, err := validateExisting(crd, []map[string]any{enginetest.Widget("v1", "", "a", map[string]any{"replicas": int64(10)})}, nil)
		want := []string{"error existingResources v1 : existing Widget a would be invalid: spec.replicas: Invalid value: 10: spec.replicas in body should be less than or equal to 5; updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused"}
		if err != nil || !enginetest.EqualLines(enginetest.Render(fs), want) {
			t.Fatalf("got %q, %v; want %q", enginetest.Render(fs), err, want)
		}
	})
}

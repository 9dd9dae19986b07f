package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func widget(version, namespace, name string, spec map[string]any) map[string]any {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return map[string]any{"apiVersion": "example.com/" + version, "kind": "Widget", "metadata": meta, "spec": spec}
}

func TestValidateExisting(t *testing.T) {
	const schema = `{type: object, properties: {replicas: {type: integer, maximum: 5}, name: {type: string, maxLength: 3},
		tags: {type: array, maxItems: 1, items: {type: string, enum: [a]}}},
		x-kubernetes-validations: [{rule: "!has(self.replicas) || self.replicas >= 1", message: "at least one replica"}]}`
	crd := newCRD(t, testVersion{"v1", true, true, schema}, testVersion{"v2", true, false, `{type: object, properties: {replicas: {type: string}}}`})
	noSchema := newCRD(t, testVersion{"v1", true, true, ""})
	noSchema.Spec.Versions[0].Schema = nil

	cases := []struct {
		name   string
		objs   []map[string]any
		config func(*config.Settings)
		want   []string
	}{
		{name: "valid objects", objs: []map[string]any{
			widget("v1", "default", "a", map[string]any{"replicas": int64(3), "name": "abc"}),
			widget("v1", "", "b", map[string]any{}),
			widget("v2", "default", "c", map[string]any{"replicas": "three"}),
		}, want: []string{}},
		{name: "invalid under the OpenAPI schema", objs: []map[string]any{
			widget("v1", "default", "a", map[string]any{"replicas": int64(10)}),
		}, want: []string{"error existingResources v1 : existing Widget default/a would be invalid: spec.replicas: Invalid value: 10: spec.replicas in body should be less than or equal to 5"}},
		{name: "invalid under a CEL rule", objs: []map[string]any{
			widget("v1", "default", "a", map[string]any{"replicas": int64(0)}),
		}, want: []string{"error existingResources v1 : existing Widget default/a would be invalid: spec: Invalid value: at least one replica"}},
		{name: "invalid under the schema of its own version only", objs: []map[string]any{
			widget("v1", "", "a", map[string]any{"replicas": "three"}),
			widget("v2", "", "b", map[string]any{"replicas": int64(3)}),
		}, want: []string{
			`error existingResources v1 : existing Widget a would be invalid: spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"; spec: Invalid value: "object": invalid data, expected int, got string evaluating rule: at least one replica`,
			`error existingResources v2 : existing Widget b would be invalid: spec.replicas: Invalid value: "integer": spec.replicas in body must be of type string: "integer"`,
		}},
		{name: "many errors are summarized", objs: []map[string]any{
			widget("v1", "ns", "a", map[string]any{"replicas": int64(9), "name": "abcd", "tags": []any{"b", "c"}}),
		}, want: []string{
			`error existingResources v1 : existing Widget ns/a would be invalid: spec.name: Too long: may not be more than 3 bytes; spec.replicas: Invalid value: 9: spec.replicas in body should be less than or equal to 5; spec.tags: Too many: 2: must have at most 1 item; and 2 more`,
		}},
		{name: "findings sorted, one per invalid object", objs: []map[string]any{
			widget("v1", "ns", "z", map[string]any{"replicas": int64(6)}),
			widget("v1", "ns", "ok", map[string]any{"replicas": int64(1)}),
			widget("v1", "ns", "m", map[string]any{"replicas": int64(7)}),
		}, want: []string{
			"error existingResources v1 : existing Widget ns/m would be invalid: spec.replicas: Invalid value: 7: spec.replicas in body should be less than or equal to 5",
			"error existingResources v1 : existing Widget ns/z would be invalid: spec.replicas: Invalid value: 6: spec.replicas in body should be less than or equal to 5",
		}},
		{name: "version missing from the new CRD is skipped", objs: []map[string]any{
			widget("v1beta1", "default", "a", map[string]any{"replicas": int64(10)}),
		}, want: []string{}},
		{name: "existingResources disabled", objs: []map[string]any{
			widget("v1", "default", "a", map[string]any{"replicas": int64(10)}),
		}, config: func(c *config.Settings) { c.Checks.CRD.ExistingResources.Enabled = false }, want: []string{}},
		{name: "warn mode", objs: []map[string]any{
			widget("v1", "default", "a", map[string]any{"replicas": int64(10)}),
		}, config: func(c *config.Settings) { c.Mode = config.ModeWarn },
			want: []string{"warning existingResources v1 : existing Widget default/a would be invalid: spec.replicas: Invalid value: 10: spec.replicas in body should be less than or equal to 5"}},
		{name: "no objects", objs: nil, want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			fs, err := ValidateExisting(crd, tc.objs, &cfg)
			if err != nil {
				t.Fatalf("ValidateExisting: %v", err)
			}
			if got := render(fs); !equalLines(got, tc.want) {
				t.Fatalf("findings differ\n got: %q\nwant: %q", got, tc.want)
			}
			for _, f := range fs {
				if f.CRD != testCRDName {
					t.Errorf("finding names CRD %q, want %q", f.CRD, testCRDName)
				}
			}
		})
	}

	t.Run("version without a schema is skipped", func(t *testing.T) {
		fs, err := ValidateExisting(noSchema, []map[string]any{widget("v1", "", "a", map[string]any{"x": int64(1)})}, nil)
		if err != nil || len(fs) != 0 {
			t.Fatalf("got %q, %v; want no findings", render(fs), err)
		}
	})
	t.Run("nil config uses the defaults", func(t *testing.T) {
		fs, err := ValidateExisting(crd, []map[string]any{widget("v1", "", "a", map[string]any{"replicas": int64(10)})}, nil)
		want := []string{"error existingResources v1 : existing Widget a would be invalid: spec.replicas: Invalid value: 10: spec.replicas in body should be less than or equal to 5"}
		if err != nil || !equalLines(render(fs), want) {
			t.Fatalf("got %q, %v; want %q", render(fs), err, want)
		}
	})
}

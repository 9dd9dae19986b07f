package migration

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func schemaOf(t *testing.T, doc string) *apiextv1.JSONSchemaProps {
	t.Helper()
	s := &apiextv1.JSONSchemaProps{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), s))
	return s
}

// TestSameFields: what makes two versions' schemas declare the same field
// set (the paths server-side apply records, and their shape), and what
// does not.
func TestSameFields(t *testing.T) {
	const base = `{type: object, properties: {spec: {type: object, properties: {
  color: {type: string},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: string}}}}}}`
	cases := []struct {
		name  string
		other string
		same  bool
	}{
		{name: "identical", other: base, same: true},
		{name: "validations, defaults and docs differ", same: true, other: `{type: object, description: d, properties: {spec: {type: object, required: [color], properties: {
  color: {type: string, maxLength: 3, enum: [red], default: red, description: x, pattern: "^r"},
  tags: {type: array, maxItems: 2, items: {type: string, minLength: 1}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer, minimum: 1}}}},
  labels: {type: object, maxProperties: 3, additionalProperties: {type: string}}},
  x-kubernetes-validations: [{rule: "true"}]}}}`},
		{name: "metadata, apiVersion and kind are the apiserver's", same: true, other: `{type: object, properties: {
  apiVersion: {type: string}, kind: {type: string}, metadata: {type: object, properties: {name: {type: string, maxLength: 5}}},
  spec: {type: object, properties: {
  color: {type: string},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: string}}}}}}`},
		{name: "a field renamed", other: `{type: object, properties: {spec: {type: object, properties: {
  colour: {type: string},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: string}}}}}}`},
		{name: "a field added", other: `{type: object, properties: {spec: {type: object, properties: {
  color: {type: string}, size: {type: integer},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: string}}}}}}`},
		{name: "a type changed", other: `{type: object, properties: {spec: {type: object, properties: {
  color: {type: integer},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: string}}}}}}`},
		{name: "a list type changed (atomic when absent)", other: `{type: object, properties: {spec: {type: object, properties: {
  color: {type: string},
  tags: {type: array, x-kubernetes-list-type: set, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: string}}}}}}`},
		{name: "list map keys changed", other: `{type: object, properties: {spec: {type: object, properties: {
  color: {type: string},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [port], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: string}}}}}}`},
		{name: "a field renamed inside list items", other: `{type: object, properties: {spec: {type: object, properties: {
  color: {type: string},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, containerPort: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: string}}}}}}`},
		{name: "a map made atomic", other: `{type: object, properties: {spec: {type: object, properties: {
  color: {type: string},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}}}}}`},
		{name: "a map's values reshaped", other: `{type: object, properties: {spec: {type: object, properties: {
  color: {type: string},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: object, properties: {value: {type: string}}}}}}}}`},
		{name: "unknown fields preserved", other: `{type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {
  color: {type: string},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: string}}}}}}`},
		{name: "int-or-string", other: `{type: object, properties: {spec: {type: object, properties: {
  color: {x-kubernetes-int-or-string: true},
  tags: {type: array, items: {type: string}},
  ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, properties: {name: {type: string}, port: {type: integer}}}},
  labels: {type: object, additionalProperties: {type: string}}}}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := schemaOf(t, base), schemaOf(t, tc.other)
			require.Equal(t, tc.same, sameFields(a, b, true))
			require.Equal(t, tc.same, sameFields(b, a, true), "symmetric")
		})
	}
	require.True(t, sameFields(nil, nil, true))
	require.False(t, sameFields(schemaOf(t, base), nil, true))
}

// TestFieldSetPolicy: which entries move under each conversion.
func TestFieldSetPolicy(t *testing.T) {
	webhook := renameCRD()
	// v1beta1 has v1's fields, with other validations.
	beta := webhook.Spec.Versions[1].DeepCopy()
	beta.Name, beta.Storage = "v1beta1", false
	beta.Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"] = apiextv1.JSONSchemaProps{Type: "string", MaxLength: ptr(int64(9))}
	webhook.Spec.Versions = append(webhook.Spec.Versions, *beta)
	none := webhook.DeepCopy()
	none.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}
	unset := webhook.DeepCopy()
	unset.Spec.Conversion = nil

	cases := []struct {
		name string
		crd  *apiextv1.CustomResourceDefinition
		want map[string]dropReason // apiVersion -> 0: moved
	}{
		{name: "webhook", crd: webhook, want: map[string]dropReason{
			"example.com/v1alpha1": dropFieldsDiffer, "example.com/v1beta1": 0, "example.com/v1": 0,
			"example.com/v0": dropUnknownVersion, "other.example.com/v1": dropUnknownVersion, "v1": dropUnknownVersion}},
		{name: "None", crd: none, want: map[string]dropReason{
			"example.com/v1alpha1": 0, "example.com/v1beta1": 0, "example.com/v0": 0}},
		{name: "no conversion (None)", crd: unset, want: map[string]dropReason{"example.com/v1alpha1": 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := fieldSetPolicyOf(tc.crd, "v1")
			for apiVersion, want := range tc.want {
				keep, why := p.keep(apiVersion)
				require.Equalf(t, want == 0, keep, "%s", apiVersion)
				require.Equalf(t, want, why, "%s", apiVersion)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestMoveManagedFieldsDrops: entries at a version whose fields differ are
// dropped and reported, the others moved (and merged); an object left
// with no entry keeps the placeholder.
func TestMoveManagedFieldsDrops(t *testing.T) {
	const apply, update = metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	policy := fieldSetPolicyOf(renameCRD(), "v1")
	got, res, err := moveManagedFields([]metav1.ManagedFieldsEntry{
		mfEntry("flux", apply, "v1alpha1", `{"f:spec":{"f:colour":{}}}`),
		mfEntry("ctl", update, "v1", `{"f:spec":{"f:replicas":{}}}`),
		mfEntry("ctl", update, "v1alpha1", `{"f:spec":{"f:size":{}}}`),
	}, "example.com/v1", policy)
	require.NoError(t, err)
	require.True(t, res.Changed)
	require.Equal(t, []droppedEntry{
		{Manager: "flux", Operation: "Apply", APIVersion: "example.com/v1alpha1", Reason: dropFieldsDiffer},
		{Manager: "ctl", Operation: "Update", APIVersion: "example.com/v1alpha1", Reason: dropFieldsDiffer},
	}, res.Dropped)
	require.Equal(t, []metav1.ManagedFieldsEntry{mfEntry("ctl", update, "v1", `{"f:spec":{"f:replicas":{}}}`)}, got,
		"ctl's entry at v1 kept as it was, not merged with the dropped one")

	got, res, err = moveManagedFields([]metav1.ManagedFieldsEntry{
		mfEntry("flux", apply, "v1alpha1", `{"f:spec":{"f:colour":{}}}`)}, "example.com/v1", policy)
	require.NoError(t, err)
	require.Len(t, res.Dropped, 1)
	require.Equal(t, []metav1.ManagedFieldsEntry{placeholderEntry("example.com/v1")}, got)

	got, res, err = moveManagedFields([]metav1.ManagedFieldsEntry{
		mfEntry("flux", apply, "v1", `{"f:spec":{"f:color":{}}}`)}, "example.com/v1", policy)
	require.NoError(t, err)
	require.False(t, res.Changed)
	require.Len(t, got, 1)
}

// webhookCRD is the fake's widgets.example.com with storedVersions
// [v1alpha1 v1], its versions' schemas those of renameCRD and conversion
// Webhook.
func webhookCRD(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := switched()
	crd := &apiextv1.CustomResourceDefinition{}
	raw, err := json.Marshal(u.Object)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, crd))
	r := renameCRD()
	crd.Spec.Conversion = r.Spec.Conversion
	for i := range crd.Spec.Versions {
		for _, v := range r.Spec.Versions {
			if v.Name == crd.Spec.Versions[i].Name {
				crd.Spec.Versions[i].Schema = v.Schema
			}
		}
	}
	return toUnstructured(crd)
}

// TestCRDMigrateStorageDropsManagedFields: under a conversion webhook that
// renames fields, entries at the old version are dropped with either
// method, and the output says which managers lost them: a line per CRD
// and a table (whose rows are the JSON of --json).
func TestCRDMigrateStorageDropsManagedFields(t *testing.T) {
	const apply, update = metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	for _, method := range []string{MethodRewrite, MethodMigrator} {
		t.Run(method, func(t *testing.T) {
			f := newFakeMigrationCluster(webhookCRD(t))
			f.servesSVM = method == MethodMigrator
			f.addObjects("a", 3, "v1alpha1")
			f.setManagers("a/obj-000", mfEntry("flux", apply, "v1alpha1", `{"f:spec":{"f:colour":{}}}`),
				mfEntry("ctl", update, "v1", `{"f:spec":{"f:replicas":{}}}`))
			f.setManagers("a/obj-001", mfEntry("flux", apply, "v1alpha1", `{"f:spec":{"f:colour":{}}}`))
			f.setManagers("a/obj-002", mfEntry("flux", apply, "v1", `{"f:spec":{"f:color":{}}}`))

			rec, err := runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}, dryRun: true, method: method})
			require.NoError(t, err)
			require.True(t, rec.preview.DryRun)
			require.Equal(t, []string{"v1alpha1"}, rec.plans[0].DroppedVersions(),
				"managedFields entries at v1alpha1 would be dropped, not moved to v1 (the command's words: TestMigratePreviewLines)")

			rec, err = runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}, method: method})
			out := rec.out.String()
			require.NoError(t, err)
			require.Contains(t, out, "crd widgets.example.com: managedFields entries dropped, not moved to v1 (their fields name other data there; "+
				"each manager owns nothing until its next apply or update): flux (Apply at example.com/v1alpha1) on 2 objects "+
				"(conversion Webhook, and v1alpha1 declares other fields than v1)")
			require.Contains(t, out, "(entries of 2 dropped)")
			require.Len(t, rec.outcome.Dropped, 1, "the table of the entries dropped (the command's words: TestMigrateDroppedTable)")
			d := rec.outcome.Dropped[0]
			require.Equal(t, []string{"widgets.example.com", "flux", "Apply", "", "example.com/v1alpha1"}, []string{d.CRD, d.Manager, d.Operation, d.Subresource, d.APIVersion})
			require.Equal(t, 2, d.Objects)
			require.Equal(t, "conversion Webhook, and v1alpha1 declares other fields than v1", d.Why())
			require.Equal(t, []metav1.ManagedFieldsEntry{mfEntry("ctl", update, "v1", `{"f:spec":{"f:replicas":{}}}`)}, f.managers("a/obj-000"))
			require.Equal(t, []metav1.ManagedFieldsEntry{placeholderEntry("example.com/v1")}, f.managers("a/obj-001"))
			require.Equal(t, []metav1.ManagedFieldsEntry{mfEntry("flux", apply, "v1", `{"f:spec":{"f:color":{}}}`)}, f.managers("a/obj-002"))
			require.Equal(t, []string{"v1"}, liveStoredVersions(t, f, "widgets.example.com"))

			rec, err = runMigrateRecorded(t, f, migrateRun{names: []string{"widgets.example.com"}, method: method})
			require.NoError(t, err)
			require.Zero(t, rec.preview.Pending(), "Nothing to migrate: the placeholder is at the storage version")
		})
	}
}

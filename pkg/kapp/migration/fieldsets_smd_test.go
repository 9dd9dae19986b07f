package migration

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/merge"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// A CRD whose conversion webhook renames fields between its two versions:
// v1alpha1 spec.colour is v1 spec.color, v1alpha1 spec.size (a number) is
// v1 spec.replicas, and v1 reuses the name spec.size for a new field the
// webhook derives ("small" below 5 replicas, else "large"). The schemas
// below are the server-side apply types the apiserver builds from the
// CRD's schemas (renameCRD).
const renameTypes = `types:
- name: v1alpha1
  map:
    fields:
    - {name: apiVersion, type: {scalar: string}}
    - {name: kind, type: {scalar: string}}
    - {name: metadata, type: {namedType: meta}}
    - {name: spec, type: {namedType: specV1alpha1}}
- name: v1
  map:
    fields:
    - {name: apiVersion, type: {scalar: string}}
    - {name: kind, type: {scalar: string}}
    - {name: metadata, type: {namedType: meta}}
    - {name: spec, type: {namedType: specV1}}
- name: meta
  map:
    fields:
    - {name: name, type: {scalar: string}}
- name: specV1alpha1
  map:
    fields:
    - {name: colour, type: {scalar: string}}
    - {name: size, type: {scalar: numeric}}
- name: specV1
  map:
    fields:
    - {name: color, type: {scalar: string}}
    - {name: replicas, type: {scalar: numeric}}
    - {name: size, type: {scalar: string}}
`

// renameCRD is that CRD, v1 its storage version.
func renameCRD() *apiextv1.CustomResourceDefinition {
	obj := func(props map[string]apiextv1.JSONSchemaProps) *apiextv1.CustomResourceValidation {
		return &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}}}}
	}
	return &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{
		Group:      "example.com",
		Conversion: &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter},
		Versions: []apiextv1.CustomResourceDefinitionVersion{
			{Name: "v1alpha1", Served: true, Schema: obj(map[string]apiextv1.JSONSchemaProps{
				"colour": {Type: "string"}, "size": {Type: "integer"}})},
			{Name: "v1", Served: true, Storage: true, Schema: obj(map[string]apiextv1.JSONSchemaProps{
				"color": {Type: "string"}, "replicas": {Type: "integer"}, "size": {Type: "string"}})},
		},
	}}
}

// renameWebhook converts between the two versions as the CRD's webhook
// does: structured-merge-diff's updater calls it wherever the apiserver
// calls the webhook (to compare an object with a manager's fields at the
// manager's version).
type renameWebhook struct{ parser *typed.Parser }

func (w renameWebhook) Convert(obj *typed.TypedValue, to fieldpath.APIVersion) (*typed.TypedValue, error) {
	u, err := plainObject(obj)
	if err != nil {
		return nil, err
	}
	from := u["apiVersion"].(string)
	if from == string(to) {
		return obj, nil
	}
	spec, _ := u["spec"].(map[string]any)
	out := map[string]any{}
	switch to {
	case "example.com/v1":
		if c, ok := spec["colour"]; ok {
			out["color"] = c
		}
		if n, ok := spec["size"].(float64); ok {
			out["replicas"] = int64(n)
			out["size"] = map[bool]string{true: "small", false: "large"}[n < 5]
		}
	case "example.com/v1alpha1":
		if c, ok := spec["color"]; ok {
			out["colour"] = c
		}
		if n, ok := spec["replicas"].(float64); ok {
			out["size"] = int64(n)
		}
	default:
		return nil, errMissingVersion
	}
	converted := map[string]any{"apiVersion": string(to), "kind": u["kind"], "metadata": u["metadata"]}
	if spec != nil {
		converted["spec"] = out
	}
	_, version, _ := cutAPIVersion(string(to))
	return w.parser.Type(version).FromUnstructured(converted)
}

var errMissingVersion = errors.New("no such version")

// plainObject is the object of tv as JSON decodes it.
func plainObject(tv *typed.TypedValue) (map[string]any, error) {
	raw, err := value.ToJSON(tv.AsValue())
	if err != nil {
		return nil, err
	}
	var u map[string]any
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, err
	}
	return u, nil
}

func (renameWebhook) IsMissingVersionError(err error) bool { return errors.Is(err, errMissingVersion) }

func cutAPIVersion(apiVersion string) (string, string, bool) {
	for i := range apiVersion {
		if apiVersion[i] == '/' {
			return apiVersion[:i], apiVersion[i+1:], true
		}
	}
	return "", apiVersion, false
}

// smdManagers turns managedFields entries into the updater's managers
// (an Apply entry is known by its manager's name).
func smdManagers(t *testing.T, entries []metav1.ManagedFieldsEntry) fieldpath.ManagedFields {
	t.Helper()
	out := fieldpath.ManagedFields{}
	for _, e := range entries {
		set := &fieldpath.Set{}
		require.NoError(t, set.FromJSON(e.FieldsV1.GetRawReader()))
		out[e.Manager] = fieldpath.NewVersionedSet(set, fieldpath.APIVersion(e.APIVersion), e.Operation == metav1.ManagedFieldsOperationApply)
	}
	return out
}

// TestRelabelledFieldSets shows, with structured-merge-diff's own updater
// (what server-side apply runs in the apiserver), what relabelling a
// managedFields entry to a version whose fields are renamed does, against
// the truth (the entry left at its version, which the updater converts
// through the webhook), and that the migration drops such an entry
// instead. flux applied {colour: red, size: 3} at v1alpha1; the object is
// stored at v1 as {color: red, replicas: 3, size: small} (size derived by
// the webhook, owned by nobody).
func TestRelabelledFieldSets(t *testing.T) {
	parser, err := typed.NewParser(renameTypes)
	require.NoError(t, err)
	// As the apiserver builds it (ReturnInputOnNoop: the object, not nil,
	// when nothing changed).
	updater := (&merge.UpdaterBuilder{Converter: renameWebhook{parser}, ReturnInputOnNoop: true}).BuildUpdater()
	at := func(version, spec string) *typed.TypedValue {
		t.Helper()
		tv, err := parser.Type(version).FromYAML(typed.YAMLObject(fmt.Sprintf(
			"apiVersion: example.com/%s\nkind: Widget\nmetadata: {name: w}\nspec: %s\n", version, spec)))
		require.NoError(t, err)
		return tv
	}
	live := at("v1", "{color: red, replicas: 3, size: small}")
	flux := mfEntry("flux", metav1.ManagedFieldsOperationApply, "v1alpha1", `{"f:spec":{"f:colour":{},"f:size":{}}}`)

	policy := fieldSetPolicyOf(renameCRD(), "v1")
	require.Equal(t, []string{"v1alpha1"}, policy.droppedVersions(), "v1alpha1 declares other fields than v1")
	relabelled, res, err := moveManagedFields([]metav1.ManagedFieldsEntry{flux}, "example.com/v1", FieldSetPolicy{}) // what conversion None does
	require.NoError(t, err)
	require.True(t, res.Changed)
	require.Equal(t, "example.com/v1", relabelled[0].APIVersion)
	ours, res, err := moveManagedFields([]metav1.ManagedFieldsEntry{flux}, "example.com/v1", policy)
	require.NoError(t, err)
	require.Equal(t, []droppedEntry{{Manager: "flux", Operation: "Apply", APIVersion: "example.com/v1alpha1", Reason: dropFieldsDiffer}}, res.Dropped)
	require.Equal(t, []metav1.ManagedFieldsEntry{placeholderEntry("example.com/v1")}, ours)

	states := map[string][]metav1.ManagedFieldsEntry{
		"truth":      {flux},
		"relabelled": relabelled,
		"ours":       ours,
	}
	spec := func(tv *typed.TypedValue) map[string]any {
		u, err := plainObject(tv)
		require.NoError(t, err)
		s, _ := u["spec"].(map[string]any)
		return s
	}
	for _, state := range []string{"truth", "relabelled", "ours"} {
		t.Run(state, func(t *testing.T) {
			managers := func() fieldpath.ManagedFields { return smdManagers(t, states[state]) }

			// Another manager applies flux's field: a conflict.
			_, _, err := updater.Apply(live, at("v1", "{color: green}"), "example.com/v1", managers(), "other", false)
			var conflicts merge.Conflicts
			if state == "truth" {
				require.ErrorAs(t, err, &conflicts)
				require.Contains(t, conflicts.Error(), `conflict with "flux"`)
			} else {
				// relabelled: flux "owns" .spec.colour, which v1 does
				// not have; the conflict is lost. ours: flux owns
				// nothing until its next apply, as documented.
				require.NoError(t, err, "no conflict")
			}

			// flux stops applying the color: server-side apply removes it.
			got, _, err := updater.Apply(live, at("v1", "{replicas: 3}"), "example.com/v1", managers(), "flux", false)
			require.NoError(t, err)
			if state == "truth" {
				require.NotContains(t, spec(got), "color", "flux's field it no longer applies is removed")
			} else {
				require.Equal(t, "red", spec(got)["color"], "left behind, owned by nobody")
			}

			// flux applies the same intent at v1: nothing it applied before
			// is dropped, and spec.size, which flux never set, stays.
			got, _, err = updater.Apply(live, at("v1", "{color: red, replicas: 3}"), "example.com/v1", managers(), "flux", false)
			require.NoError(t, err)
			if state == "relabelled" {
				require.NotContains(t, spec(got), "size",
					"the relabelled entry claims .spec.size, a name v1 reuses for other data: flux's apply prunes it")
			} else {
				require.Equal(t, "small", spec(got)["size"])
			}
		})
	}
}

// TestRelabelledFieldSetsConversionNone: under conversion None the fields
// of both versions are the same data, and the moved entry keeps exactly
// the ownership the entry had at its version.
func TestRelabelledFieldSetsConversionNone(t *testing.T) {
	const types = `types:
- name: v1alpha1
  map:
    fields:
    - {name: apiVersion, type: {scalar: string}}
    - {name: kind, type: {scalar: string}}
    - {name: spec, type: {map: {fields: [{name: color, type: {scalar: string}}, {name: size, type: {scalar: numeric}}]}}}
- name: v1
  map:
    fields:
    - {name: apiVersion, type: {scalar: string}}
    - {name: kind, type: {scalar: string}}
    - {name: spec, type: {map: {fields: [{name: color, type: {scalar: string}}, {name: size, type: {scalar: numeric}}]}}}
`
	parser, err := typed.NewParser(types)
	require.NoError(t, err)
	updater := (&merge.UpdaterBuilder{Converter: noneConverter{parser}, ReturnInputOnNoop: true}).BuildUpdater()
	at := func(version, spec string) *typed.TypedValue {
		tv, err := parser.Type(version).FromYAML(typed.YAMLObject("apiVersion: example.com/" + version + "\nkind: Widget\nspec: " + spec + "\n"))
		require.NoError(t, err)
		return tv
	}
	flux := mfEntry("flux", metav1.ManagedFieldsOperationApply, "v1alpha1", `{"f:spec":{"f:color":{},"f:size":{}}}`)
	moved, res, err := moveManagedFields([]metav1.ManagedFieldsEntry{flux}, "example.com/v1", FieldSetPolicy{})
	require.NoError(t, err)
	require.Empty(t, res.Dropped)
	live := at("v1", "{color: red, size: 3}")
	for name, entries := range map[string][]metav1.ManagedFieldsEntry{"truth": {flux}, "moved": moved} {
		t.Run(name, func(t *testing.T) {
			_, _, err := updater.Apply(live, at("v1", "{color: green}"), "example.com/v1", smdManagers(t, entries), "other", false)
			var conflicts merge.Conflicts
			require.ErrorAs(t, err, &conflicts)
			got, _, err := updater.Apply(live, at("v1", "{size: 3}"), "example.com/v1", smdManagers(t, entries), "flux", false)
			require.NoError(t, err)
			u, err := plainObject(got)
			require.NoError(t, err)
			require.Equal(t, map[string]any{"size": float64(3)}, u["spec"], "color, no longer applied, removed")
		})
	}
}

// noneConverter is conversion None: only apiVersion changes.
type noneConverter struct{ parser *typed.Parser }

func (c noneConverter) Convert(obj *typed.TypedValue, to fieldpath.APIVersion) (*typed.TypedValue, error) {
	m, err := plainObject(obj)
	if err != nil {
		return nil, err
	}
	u := unstructured.Unstructured{Object: m}
	u.SetAPIVersion(string(to))
	_, version, _ := cutAPIVersion(string(to))
	return c.parser.Type(version).FromUnstructured(u.Object)
}

func (noneConverter) IsMissingVersionError(error) bool { return false }

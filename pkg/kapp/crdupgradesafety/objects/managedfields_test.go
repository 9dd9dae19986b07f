package objects_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// managed is a stored object whose managedFields entries name the given
// "manager@version" pairs (group example.com).
func managed(name string, entries ...string) map[string]any {
	var mf []any
	for _, e := range entries {
		manager, version, _ := strings.Cut(e, "@")
		mf = append(mf, map[string]any{"manager": manager, "operation": "Apply", "apiVersion": "example.com/" + version,
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}})
	}
	return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "default", "managedFields": mf}}
}

func versions(crd *apiextv1.CustomResourceDefinition, vs ...apiextv1.CustomResourceDefinitionVersion) *apiextv1.CustomResourceDefinition {
	c := crd.DeepCopy()
	c.Spec.Versions = vs
	return c
}

func TestManagedFields(t *testing.T) {
	base := testcrd.MustCRD(t, testcrd.OldCRD)
	v := func(name string, served, storage bool) apiextv1.CustomResourceDefinitionVersion {
		out := *base.Spec.Versions[0].DeepCopy()
		out.Name, out.Served, out.Storage = name, served, storage
		return out
	}
	old := versions(base, v("v1alpha1", true, false), v("v1", true, true))
	objs := []map[string]any{
		managed("a", "flux@v1alpha1", "kapp@v1"),
		managed("b", "kubectl@v1alpha1", "flux@v1alpha1"),
		managed("c", "flux@v1"),
		managed("d"),
	}
	cases := []struct {
		name   string
		new    *apiextv1.CustomResourceDefinition
		config func(*config.Settings)
		want   []string
	}{
		{name: "a version removed while entries name it: every server-side apply of those objects fails",
			new: versions(base, v("v1", true, true)),
			want: []string{`error managedFields v1alpha1: version "v1alpha1" removed while managedFields of stored objects name it (managers flux, kubectl): ` +
				`every server-side apply of them fails (request to convert CR to an invalid group/version) until their managedFields are migrated: ` +
				`2 of 4 stored Widgets have managedFields entries at it: default/a (managers flux), default/b (managers flux, kubectl)` +
				` => keep "v1alpha1" and migrate the managedFields of the stored objects (default/a, default/b) to the storage version first: ` +
				`run 'kapp tools crd-migrate-storage --crd ` + base.Name + ` --to v1' (it migrates managedFields too), then remove it`}},
		{name: "a version unserved: server-side apply still works, a warning",
			new: versions(base, v("v1alpha1", false, false), v("v1", true, true)),
			want: []string{`warning managedFields v1alpha1: version "v1alpha1" no longer served while managedFields of stored objects name it (managers flux, kubectl): ` +
				`server-side apply still works, but fails once the version is removed, until their managedFields are migrated: ` +
				`2 of 4 stored Widgets have managedFields entries at it: default/a (managers flux), default/b (managers flux, kubectl)` +
				` => keep "v1alpha1" and migrate the managedFields of the stored objects (default/a, default/b) to the storage version first: ` +
				`run 'kapp tools crd-migrate-storage --crd ` + base.Name + ` --to v1' (it migrates managedFields too), then remove it`}},
		{name: "unservedEnforcement None", new: versions(base, v("v1alpha1", false, false), v("v1", true, true)),
			config: func(c *config.Settings) { c.Checks.CRD.ManagedFields.UnservedEnforcement = config.EnforcementNone },
			want:   []string{}},
		{name: "disabled", new: versions(base, v("v1", true, true)),
			config: func(c *config.Settings) { c.Checks.CRD.ManagedFields.Enabled = false }, want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			r := objects.NewManagedFieldsReader(old, tc.new)
			require.NotNil(t, r)
			r.Read(objs[:2])
			r.Read(objs[2:])
			got := []string{}
			for _, f := range r.Findings(&cfg) {
				got = append(got, fmt.Sprintf("%s %s %s: %s => %s", f.Severity, f.Check, f.Version, report.Message(f), report.RemedyText(f)))
			}
			require.Equal(t, tc.want, got)
		})
	}
	t.Run("no version removed or unserved: nothing to read", func(t *testing.T) {
		require.Nil(t, objects.NewManagedFieldsReader(old, old))
	})
}

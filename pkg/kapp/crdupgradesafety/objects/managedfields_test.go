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
			r := objects.NewManagedFieldsReader(old, tc.new, config.KubeVersion{})
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
		require.Nil(t, objects.NewManagedFieldsReader(old, old, config.KubeVersion{Major: 1, Minor: 35}))
	})
}

// TestManagedFieldsConversionChange: on a cluster at 1.36 or older, an
// update that changes the conversion webhook while stored objects have
// managedFields entries at two or more versions is a warning naming
// kubernetes#136919 with those objects counted; on 1.37 (which keeps the
// managedFields) nothing is read. An update that leaves the webhook as it
// is, or stops converting through one, is no such change.
func TestManagedFieldsConversionChange(t *testing.T) {
	base := testcrd.MustCRD(t, testcrd.OldCRD)
	v := func(name string, storage bool) apiextv1.CustomResourceDefinitionVersion {
		out := *base.Spec.Versions[0].DeepCopy()
		out.Name, out.Served, out.Storage = name, true, storage
		return out
	}
	webhook := func(url string) *apiextv1.CustomResourceDefinition {
		c := versions(base, v("v1alpha1", false), v("v1", true))
		if url != "" {
			c.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter,
				Webhook: &apiextv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextv1.WebhookClientConfig{URL: &url}}}
		}
		return c
	}
	objs := []map[string]any{
		managed("a", "flux@v1alpha1", "kapp@v1"),
		managed("b", "kubectl@v1alpha1", "flux@v1alpha1"),
		managed("c", "flux@v1", "kapp@v1"),
		managed("d"),
		managed("e", "kapp@v1", "kubectl@v1beta1"),
	}
	const warning = `warning managedFields : conversion webhook changed while managedFields of stored objects name several versions (v1, v1alpha1, v1beta1): ` +
		`up to Kubernetes 1.36 (judged for 1.%d), a write of such an object while the conversion webhook is down drops all its managedFields (kubernetes#136919): ` +
		`2 of 5 stored Widgets have managedFields entries at several versions: default/a (versions v1, v1alpha1), default/e (versions v1, v1beta1)` +
		` => roll out the new conversion webhook and wait until it serves before the CRD changes (in a kapp deploy: the change-group and change-rule annotations ` +
		`that order the webhook's workload first), so no write finds it down; or first migrate the managedFields of the stored objects (default/a, default/e) ` +
		`to one version: run 'kapp tools crd-migrate-storage --crd %s --to v1' (kubernetes#136919)`
	for _, tc := range []struct {
		name     string
		old, new *apiextv1.CustomResourceDefinition
		minor    int
		want     []string // nil: nothing to read
	}{
		{"webhook added on 1.35", webhook(""), webhook("https://a.example/convert"), 35, []string{fmt.Sprintf(warning, 35, base.Name)}},
		{"webhook moved on 1.36", webhook("https://a.example/convert"), webhook("https://b.example/convert"), 36, []string{fmt.Sprintf(warning, 36, base.Name)}},
		{"webhook moved on 1.37: kept there", webhook("https://a.example/convert"), webhook("https://b.example/convert"), 37, nil},
		{"webhook unchanged on 1.35", webhook("https://a.example/convert"), webhook("https://a.example/convert"), 35, nil},
		{"webhook dropped on 1.35", webhook("https://a.example/convert"), webhook(""), 35, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.KubeVersion = config.KubeVersion{Major: 1, Minor: tc.minor}
			r := objects.NewManagedFieldsReader(tc.old, tc.new, cfg.KubeVersion)
			if tc.want == nil {
				require.Nil(t, r)
				return
			}
			require.NotNil(t, r)
			r.Read(objs[:3])
			r.Read(objs[3:])
			got := []string{}
			for _, f := range r.Findings(&cfg) {
				got = append(got, fmt.Sprintf("%s %s %s: %s => %s", f.Severity, f.Check, f.Version, report.Message(f), report.RemedyText(f)))
			}
			require.Equal(t, tc.want, got)
		})
	}
	t.Run("no object with entries at several versions: no finding", func(t *testing.T) {
		cfg := config.Default()
		cfg.KubeVersion = config.KubeVersion{Major: 1, Minor: 35}
		r := objects.NewManagedFieldsReader(webhook(""), webhook("https://a.example/convert"), cfg.KubeVersion)
		r.Read(objs[2:4])
		require.Empty(t, r.Findings(&cfg))
	})
}

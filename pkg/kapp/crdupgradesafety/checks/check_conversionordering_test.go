package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// orderingCRD is a CRD with versions v1 (storage) and v2 whose conversion
// is a webhook behind Service conv/gizmo-webhook, for edit to change.
func orderingCRD(edit func(*apiextv1.CustomResourceDefinition)) *apiextv1.CustomResourceDefinition {
	path := "/convert"
	schema := func(field string) *apiextv1.CustomResourceValidation {
		return &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextv1.JSONSchemaProps{"spec": {Type: "object",
				Properties: map[string]apiextv1.JSONSchemaProps{field: {Type: "string"}}}}}}
	}
	crd := &apiextv1.CustomResourceDefinition{}
	crd.Name = "gizmos.example.com"
	crd.Spec.Group = "example.com"
	crd.Spec.Versions = []apiextv1.CustomResourceDefinitionVersion{
		{Name: "v1", Served: true, Storage: true, Schema: schema("colour")},
		{Name: "v2", Served: true, Schema: schema("color")},
	}
	crd.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter,
		Webhook: &apiextv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "conv", Name: "gizmo-webhook", Path: &path}}}}
	if edit != nil {
		edit(crd)
	}
	return crd
}

// TestConversionNeedOf: the rule of when a CRD update needs its conversion
// webhook's new code.
func TestConversionNeedOf(t *testing.T) {
	port := func(p int32) *int32 { return &p }
	cases := []struct {
		name     string
		old, new *apiextv1.CustomResourceDefinition
		need     finding.ConversionNeed
		version  string
	}{
		{name: "unchanged", old: orderingCRD(nil), new: orderingCRD(nil)},
		{name: "a create", new: orderingCRD(nil)},
		{name: "no webhook in the new CRD", old: orderingCRD(nil),
			new: orderingCRD(func(c *apiextv1.CustomResourceDefinition) { c.Spec.Conversion = nil })},
		{name: "None -> Webhook", old: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}
		}), new: orderingCRD(nil), need: finding.NeedConversionChanged},
		{name: "another Service", old: orderingCRD(nil), new: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.Service.Name = "gizmo-webhook-v2"
		}), need: finding.NeedConversionChanged},
		{name: "port 443 spelled out is the default", old: orderingCRD(nil), new: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.Service.Port = port(443)
		})},
		{name: "another port", old: orderingCRD(nil), new: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.Service.Port = port(9443)
		}), need: finding.NeedConversionChanged},
		{name: "a new CA bundle", old: orderingCRD(nil), new: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte("ca")
		}), need: finding.NeedConversionChanged},
		{name: "conversionReviewVersions", old: orderingCRD(nil), new: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ConversionReviewVersions = []string{"v1", "v1beta1"}
		}), need: finding.NeedConversionChanged},
		{name: "storage version moves", old: orderingCRD(nil), new: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = false, true
		}), need: finding.NeedStorageVersionChanged, version: "v2"},
		{name: "a version added", old: orderingCRD(nil), new: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions = append(c.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{Name: "v3", Served: true})
		}), need: finding.NeedVersionAdded, version: "v3"},
		{name: "a version's schema changes", old: orderingCRD(nil), new: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"].Properties["shade"] = apiextv1.JSONSchemaProps{Type: "string"}
		}), need: finding.NeedSchemaChanged, version: "v2"},
		{name: "a version unserved: no new code", old: orderingCRD(nil), new: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Served = false
		})},
		{name: "a version removed: no new code", old: orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions = append(c.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{Name: "v0"})
		}), new: orderingCRD(nil)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			need, version := ConversionNeedOf(tc.old, tc.new)
			require.Equal(t, tc.need, need)
			require.Equal(t, tc.version, version)
		})
	}
}

// TestConversionOrderingFindings: a finding only for an update that needs
// the new code and a workload not ordered; its facts name the Service, the
// workloads and the annotations; waivers and the toggle apply.
func TestConversionOrderingFindings(t *testing.T) {
	ordering := func(ordered ...bool) *finding.ConversionOrdering {
		o := &finding.ConversionOrdering{Service: "conv/gizmo-webhook", Group: "g/gizmos.example.com", RuleAnnotation: "kapp.k14s.io/change-rule"}
		for i, ok := range ordered {
			o.Workloads = append(o.Workloads, finding.OrderedWorkload{Kind: "Deployment", Namespace: "conv", Name: string(rune('a' + i)),
				Ordered: ok, GroupAnnotation: "kapp.k14s.io/change-group"})
		}
		return o
	}
	moved := orderingCRD(func(c *apiextv1.CustomResourceDefinition) {
		c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = false, true
	})
	cases := []struct {
		name     string
		old, new *apiextv1.CustomResourceDefinition
		o        *finding.ConversionOrdering
		config   func(*config.Settings)
		want     []string
	}{
		{name: "no ordering facts (not a kapp deploy)", old: orderingCRD(nil), new: moved},
		{name: "every workload ordered", old: orderingCRD(nil), new: moved, o: ordering(true, true)},
		{name: "no workload", old: orderingCRD(nil), new: moved, o: ordering()},
		{name: "needs no new code", old: orderingCRD(nil), new: orderingCRD(nil), o: ordering(false)},
		{name: "one of two not ordered", old: orderingCRD(nil), new: moved, o: ordering(true, false),
			want: []string{`error conversionOrdering  : the storage version becomes "v2": the conversion webhook's Service conv/gizmo-webhook is served by Deployment conv/b, which the change set rolls out, but kapp may update the CRD before it is rolled out`}},
		{name: "two not ordered", old: orderingCRD(nil), new: moved, o: ordering(false, false),
			want: []string{`error conversionOrdering  : the storage version becomes "v2": the conversion webhook's Service conv/gizmo-webhook is served by Deployment conv/a, Deployment conv/b, which the change set rolls out, but kapp may update the CRD before they are rolled out`}},
		{name: "disabled", old: orderingCRD(nil), new: moved, o: ordering(false),
			config: func(c *config.Settings) { c.Checks.CRD.ConversionOrdering.Enabled = false }},
		{name: "waived", old: orderingCRD(nil), new: moved, o: ordering(false), config: func(c *config.Settings) {
			c.Waivers = []config.Waiver{{CRD: "gizmos.example.com", Checks: []string{config.CheckConversionOrdering}, Reason: "rolled out by hand first"}}
		}, want: []string{`warning conversionOrdering  : the storage version becomes "v2": the conversion webhook's Service conv/gizmo-webhook is served by Deployment conv/a, which the change set rolls out, but kapp may update the CRD before it is rolled out (exempted: rolled out by hand first)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			findings := ConversionOrderingFindings(tc.old, tc.new, tc.o, &cfg)
			got := enginetest.Render(findings)
			for _, f := range findings {
				require.Equal(t, finding.RemedyOrderWorkloadFirst, f.Remedy.Action)
				require.NotNil(t, f.Ordering)
				require.Equal(t, "conv/gizmo-webhook", f.Ordering.Service)
				require.NotEmpty(t, f.Ordering.Need)
				require.False(t, f.DataLoss)
			}
			if tc.want == nil {
				tc.want = []string{}
			}
			require.Equal(t, tc.want, got)
		})
	}
}

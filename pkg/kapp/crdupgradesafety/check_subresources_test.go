package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func withSubresources(s *apiextv1.CustomResourceSubresources) func(*apiextv1.CustomResourceDefinition) {
	return func(c *apiextv1.CustomResourceDefinition) {
		for i := range c.Spec.Versions {
			c.Spec.Versions[i].Subresources = s.DeepCopy()
		}
	}
}

func TestSubresources(t *testing.T) {
	v1 := testVersion{"v1", true, true, ""}
	status := &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}}
	scale := func(spec, status string, selector *string) *apiextv1.CustomResourceSubresources {
		return &apiextv1.CustomResourceSubresources{
			Status: &apiextv1.CustomResourceSubresourceStatus{},
			Scale:  &apiextv1.CustomResourceSubresourceScale{SpecReplicasPath: spec, StatusReplicasPath: status, LabelSelectorPath: selector},
		}
	}
	sel := ptrTo(".status.selector")
	counted := testVersion{"v1", true, true, `{type: object, properties: {replicas: {type: integer}}}`}
	bounded := testVersion{"v1", true, true, `{type: object, properties: {replicas: {type: integer, minimum: 0, maximum: 2147483647}}}`}
	open := testVersion{"v1", true, true, `{type: object, x-kubernetes-preserve-unknown-fields: true}`}
	runCRDCases(t, []crdCase{
		{name: "unchanged", old: with(newCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", sel))),
			new: with(newCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", sel))), want: []string{}},
		{name: "status removed", old: with(newCRD(t, v1), withSubresources(status)), new: newCRD(t, v1),
			want: []string{"error subresources v1 : status subresource removed: status writes (.../status) get 404 Not Found"}},
		{name: "status removed, subresources kept", old: with(newCRD(t, v1), withSubresources(status)), new: with(newCRD(t, v1), withSubresources(&apiextv1.CustomResourceSubresources{})),
			want: []string{"error subresources v1 : status subresource removed: status writes (.../status) get 404 Not Found"}},
		{name: "status added", old: newCRD(t, v1), new: with(newCRD(t, v1), withSubresources(status)), want: []string{}},
		{name: "scale removed", old: with(newCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", nil))), new: with(newCRD(t, v1), withSubresources(status)),
			want: []string{"error subresources v1 : scale subresource removed: .../scale (kubectl scale, autoscalers) gets 404 Not Found"}},
		{name: "scale added where no object holds its paths", old: with(newCRD(t, v1), withSubresources(status)), new: with(newCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", nil))),
			want: []string{}},
		{name: "scale added where any integer is stored", old: with(newCRD(t, counted), withSubresources(status)), new: with(newCRD(t, counted), withSubresources(scale(".spec.replicas", ".status.replicas", nil))),
			want: []string{"error subresources v1 : scale subresource added: objects whose .spec.replicas is not an integer from 0 to 2147483647 can no longer be written"}},
		{name: "scale added where only replica counts are stored", old: with(newCRD(t, bounded), withSubresources(status)), new: with(newCRD(t, bounded), withSubresources(scale(".spec.replicas", ".status.replicas", nil))),
			want: []string{}},
		{name: "scale added where unknown fields are kept", old: newCRD(t, open), new: with(newCRD(t, open), withSubresources(scale(".spec.replicas", ".status.replicas", ptrTo(".spec.selector")))),
			want: []string{
				"error subresources v1 : scale subresource added: objects whose .spec.replicas is not an integer from 0 to 2147483647 can no longer be written",
				"error subresources v1 : scale subresource added: objects whose .spec.selector is not a string can no longer be written",
			}},
		{name: "scale paths changed", old: with(newCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", nil))),
			new: with(newCRD(t, v1), withSubresources(scale(".spec.size", ".status.size", sel))),
			want: []string{
				`error subresources v1 : scale subresource labelSelectorPath changed: (none) -> ".status.selector"`,
				`error subresources v1 : scale subresource specReplicasPath changed: ".spec.replicas" -> ".spec.size"`,
				`error subresources v1 : scale subresource statusReplicasPath changed: ".status.replicas" -> ".status.size"`,
			}},
		{name: "version removed: left to the version checks", old: with(newCRD(t, testVersion{"v1", false, false, ""}, testVersion{"v2", true, true, ""}), withSubresources(status)),
			new: with(newCRD(t, testVersion{"v2", true, true, ""}), withSubresources(status)), want: []string{}},
		{name: "subresources disabled", old: with(newCRD(t, v1), withSubresources(status)), new: newCRD(t, v1),
			config: func(c *config.Settings) { c.Checks.CRD.Subresources.Enabled = false }, want: []string{}},
	})
}

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
		{name: "scale added", old: with(newCRD(t, v1), withSubresources(status)), new: with(newCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", nil))),
			want: []string{}},
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
			config: func(c *config.CRDUpgradeSafety) { c.Checks.CRD.Subresources.Enabled = false }, want: []string{}},
	})
}

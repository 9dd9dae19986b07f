package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
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
	v1 := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}
	status := &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}}
	scale := func(spec, status string, selector *string) *apiextv1.CustomResourceSubresources {
		return &apiextv1.CustomResourceSubresources{
			Status: &apiextv1.CustomResourceSubresourceStatus{},
			Scale:  &apiextv1.CustomResourceSubresourceScale{SpecReplicasPath: spec, StatusReplicasPath: status, LabelSelectorPath: selector},
		}
	}
	sel := ptrTo(".status.selector")
	counted := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {replicas: {type: integer}}}`}
	bounded := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {replicas: {type: integer, minimum: 0, maximum: 2147483647}}}`}
	open := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, x-kubernetes-preserve-unknown-fields: true}`}
	runCRDCases(t, []crdCase{
		{name: "unchanged", old: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", sel))),
			new: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", sel))), want: []string{}},
		{name: "status removed", old: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(status)), new: enginetest.NewCRD(t, v1),
			want: []string{"error subresources v1 : status subresource removed: status writes (.../status) get 404 Not Found"}},
		{name: "status removed, subresources kept", old: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(status)), new: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(&apiextv1.CustomResourceSubresources{})),
			want: []string{"error subresources v1 : status subresource removed: status writes (.../status) get 404 Not Found"}},
		{name: "status added", old: enginetest.NewCRD(t, v1), new: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(status)), want: []string{}},
		{name: "scale removed", old: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", nil))), new: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(status)),
			want: []string{"error subresources v1 : scale subresource removed: .../scale (kubectl scale, autoscalers) gets 404 Not Found"}},
		{name: "scale added where no object holds its paths", old: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(status)), new: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", nil))),
			want: []string{}},
		{name: "scale added where any integer is stored", old: enginetest.With(enginetest.NewCRD(t, counted), withSubresources(status)), new: enginetest.With(enginetest.NewCRD(t, counted), withSubresources(scale(".spec.replicas", ".status.replicas", nil))),
			want: []string{"error subresources v1 : scale subresource added: objects whose .spec.replicas is not an integer from 0 to 2147483647 can no longer be written"}},
		{name: "scale added where only replica counts are stored", old: enginetest.With(enginetest.NewCRD(t, bounded), withSubresources(status)), new: enginetest.With(enginetest.NewCRD(t, bounded), withSubresources(scale(".spec.replicas", ".status.replicas", nil))),
			want: []string{}},
		{name: "scale added where unknown fields are kept", old: enginetest.NewCRD(t, open), new: enginetest.With(enginetest.NewCRD(t, open), withSubresources(scale(".spec.replicas", ".status.replicas", ptrTo(".spec.selector")))),
			want: []string{
				"error subresources v1 : scale subresource added: objects whose .spec.replicas is not an integer from 0 to 2147483647 can no longer be written",
				"error subresources v1 : scale subresource added: objects whose .spec.selector is not a string can no longer be written",
			}},
		{name: "scale paths changed", old: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(scale(".spec.replicas", ".status.replicas", nil))),
			new: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(scale(".spec.size", ".status.size", sel))),
			want: []string{
				`error subresources v1 : scale subresource labelSelectorPath changed: (none) -> ".status.selector"`,
				`error subresources v1 : scale subresource specReplicasPath changed: ".spec.replicas" -> ".spec.size"`,
				`error subresources v1 : scale subresource statusReplicasPath changed: ".status.replicas" -> ".status.size"`,
			}},
		{name: "version removed: left to the version checks", old: enginetest.With(enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: false, Storage: false, Spec: ""}, enginetest.TestVersion{Name: "v2", Served: true, Storage: true, Spec: ""}), withSubresources(status)),
			new: enginetest.With(enginetest.NewCRD(t, enginetest.TestVersion{Name: "v2", Served: true, Storage: true, Spec: ""}), withSubresources(status)), want: []string{}},
		{name: "subresources disabled", old: enginetest.With(enginetest.NewCRD(t, v1), withSubresources(status)), new: enginetest.NewCRD(t, v1),
			config: func(c *config.Settings) { c.Checks.CRD.Subresources.Enabled = false }, want: []string{}},
	})
}

package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func withSelectableFields(paths ...string) func(*apiextv1.CustomResourceDefinition) {
	return func(c *apiextv1.CustomResourceDefinition) {
		for i := range c.Spec.Versions {
			c.Spec.Versions[i].SelectableFields = nil
			for _, p := range paths {
				c.Spec.Versions[i].SelectableFields = append(c.Spec.Versions[i].SelectableFields, apiextv1.SelectableField{JSONPath: p})
			}
		}
	}
}

func TestSelectableFields(t *testing.T) {
	v1 := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {color: {type: string}, size: {type: string}}}`}
	runCRDCases(t, []crdCase{
		{name: "unchanged", old: enginetest.With(enginetest.NewCRD(t, v1), withSelectableFields(".spec.color")), new: enginetest.With(enginetest.NewCRD(t, v1), withSelectableFields(".spec.color")), want: []string{}},
		{name: "reordered", old: enginetest.With(enginetest.NewCRD(t, v1), withSelectableFields(".spec.color", ".spec.size")),
			new: enginetest.With(enginetest.NewCRD(t, v1), withSelectableFields(".spec.size", ".spec.color")), want: []string{}},
		{name: "added", old: enginetest.With(enginetest.NewCRD(t, v1), withSelectableFields(".spec.color")), new: enginetest.With(enginetest.NewCRD(t, v1), withSelectableFields(".spec.color", ".spec.size")), want: []string{}},
		{name: "removed", old: enginetest.With(enginetest.NewCRD(t, v1), withSelectableFields(".spec.color", ".spec.size")), new: enginetest.With(enginetest.NewCRD(t, v1), withSelectableFields(".spec.color")),
			want: []string{`error selectableFields v1 : selectable field ".spec.size" removed: field selectors on it are rejected`}},
		{name: "all removed", old: enginetest.With(enginetest.NewCRD(t, v1), withSelectableFields(".spec.color", ".spec.size")), new: enginetest.NewCRD(t, v1),
			want: []string{
				`error selectableFields v1 : selectable field ".spec.color" removed: field selectors on it are rejected`,
				`error selectableFields v1 : selectable field ".spec.size" removed: field selectors on it are rejected`,
			}},
		{name: "selectableFields disabled", old: enginetest.With(enginetest.NewCRD(t, v1), withSelectableFields(".spec.color")), new: enginetest.NewCRD(t, v1),
			config: func(c *config.Settings) { c.Checks.CRD.SelectableFields.Enabled = false }, want: []string{}},
	})
}

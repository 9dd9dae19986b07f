package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of selectableFields: a selectable field removed.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckSelectableFields}, Runs: finding.RunsOnCRD, Remedy: finding.RemedyKeepClientFacing})

// checkSelectableFields: for every version in both CRDs, a selectable
// field (spec.versions[].selectableFields[].jsonPath) removed makes the
// field selectors of its clients fail. Adding one is not reported.
func checkSelectableFields(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) {
	if !p.Settings.Checks.CRD.SelectableFields.Enabled {
		return
	}
	forVersionsInBoth(old, new, func(ov, nv *apiextv1.CustomResourceDefinitionVersion) {
		if len(ov.SelectableFields) == 0 {
			return
		}
		kept := make(map[string]struct{}, len(nv.SelectableFields))
		for _, f := range nv.SelectableFields {
			kept[f.JSONPath] = struct{}{}
		}
		for _, f := range ov.SelectableFields {
			if _, ok := kept[f.JSONPath]; !ok {
				p.CRDLevel(config.EnforcementStrict, ov.Name, config.CheckSelectableFields, finding.Change{Kind: "removed", Old: f.JSONPath},
					"selectable field %s removed: field selectors on it are rejected", finding.RenderString(f.JSONPath))
			}
		}
	})
}

package crdupgradesafety

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// checkSubresources: for every version in both CRDs, the status
// subresource removed makes controllers' status writes (…/status) fail
// with 404; the scale subresource removed makes …/scale (kubectl scale,
// autoscalers) fail; its specReplicasPath, statusReplicasPath or
// labelSelectorPath changed makes scale read and write other fields than
// stored objects and their clients use. Adding a subresource is not
// reported.
func checkSubresources(p *policy, old, new *apiextv1.CustomResourceDefinition) {
	if !p.cfg.Checks.CRD.Subresources.Enabled {
		return
	}
	forVersionsInBoth(old, new, func(ov, nv *apiextv1.CustomResourceDefinitionVersion) {
		if ov.Subresources == nil {
			return
		}
		os, ns := ov.Subresources, nv.Subresources
		if ns == nil {
			ns = &apiextv1.CustomResourceSubresources{}
		}
		if os.Status != nil && ns.Status == nil {
			p.crdLevel(config.EnforcementStrict, ov.Name, config.CheckSubresources,
				"status subresource removed: status writes (.../status) get 404 Not Found")
		}
		switch o, n := os.Scale, ns.Scale; {
		case o == nil:
		case n == nil:
			p.crdLevel(config.EnforcementStrict, ov.Name, config.CheckSubresources,
				"scale subresource removed: .../scale (kubectl scale, autoscalers) gets 404 Not Found")
		default:
			scalePath(p, ov.Name, "specReplicasPath", o.SpecReplicasPath, n.SpecReplicasPath)
			scalePath(p, ov.Name, "statusReplicasPath", o.StatusReplicasPath, n.StatusReplicasPath)
			scalePath(p, ov.Name, "labelSelectorPath", deref(o.LabelSelectorPath), deref(n.LabelSelectorPath))
		}
	})
}

func scalePath(p *policy, version, name, o, n string) {
	if o != n {
		p.crdLevel(config.EnforcementStrict, version, config.CheckSubresources,
			"scale subresource %s changed: %s -> %s", name, renderString(o), renderString(n))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

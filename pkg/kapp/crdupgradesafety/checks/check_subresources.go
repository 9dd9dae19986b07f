package checks

import (
	"math"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of subresources: the status or scale subresource removed or changed.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckSubresources}, Runs: finding.RunsOnCRD, Remedy: finding.RemedyKeepClientFacing})

// checkSubresources: for every version in both CRDs, the status
// subresource removed makes controllers' status writes (…/status) fail
// with 404; the scale subresource removed makes …/scale (kubectl scale,
// autoscalers) fail; its specReplicasPath, statusReplicasPath or
// labelSelectorPath changed makes scale read and write other fields than
// stored objects and their clients use. Adding the status subresource is
// not reported; adding the scale subresource is when stored objects may
// hold values its validation rejects (scaleAdded).
func checkSubresources(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) {
	if !p.Settings.Checks.CRD.Subresources.Enabled {
		return
	}
	none := &apiextv1.CustomResourceSubresources{}
	forVersionsInBoth(old, new, func(ov, nv *apiextv1.CustomResourceDefinitionVersion) {
		os, ns := ov.Subresources, nv.Subresources
		if os == nil {
			os = none
		}
		if ns == nil {
			ns = none
		}
		if os.Status != nil && ns.Status == nil {
			p.CRDLevel(config.EnforcementStrict, ov.Name, config.CheckSubresources, finding.Change{Kind: "statusRemoved"},
				"status subresource removed: status writes (.../status) get 404 Not Found")
		}
		switch o, n := os.Scale, ns.Scale; {
		case o == nil && n == nil:
		case o == nil:
			scaleAdded(p, nv, n, new.Spec.PreserveUnknownFields)
		case n == nil:
			p.CRDLevel(config.EnforcementStrict, ov.Name, config.CheckSubresources, finding.Change{Kind: "scaleRemoved"},
				"scale subresource removed: .../scale (kubectl scale, autoscalers) gets 404 Not Found")
		default:
			scalePath(p, ov.Name, "specReplicasPath", o.SpecReplicasPath, n.SpecReplicasPath)
			scalePath(p, ov.Name, "statusReplicasPath", o.StatusReplicasPath, n.StatusReplicasPath)
			scalePath(p, ov.Name, "labelSelectorPath", deref(o.LabelSelectorPath), deref(n.LabelSelectorPath))
		}
	})
}

func scalePath(p *finding.Policy, version, name, o, n string) {
	if o != n {
		p.CRDLevel(config.EnforcementStrict, version, config.CheckSubresources, finding.Change{Kind: name, Old: o, New: n},
			"scale subresource %s changed: %s -> %s", name, finding.RenderString(o), finding.RenderString(n))
	}
}

// scaleAdded: with a scale subresource, every create and update of an
// object checks that the replicas paths hold integers from 0 to
// 2147483647 and the label selector path a string
// (customResourceValidator.ValidateScaleSpec and ValidateScaleStatus).
// Stored objects may hold other values there unless the new schema allows
// only such values (or no value can be stored at the path).
func scaleAdded(p *finding.Policy, v *apiextv1.CustomResourceDefinitionVersion, sc *apiextv1.CustomResourceSubresourceScale, keepsAll bool) {
	root := VersionSchema(v)
	for _, path := range []string{sc.SpecReplicasPath, sc.StatusReplicasPath} {
		if s, storable := schemaAtPath(root, path, keepsAll); storable && !onlyReplicas(s) {
			p.CRDLevel(config.EnforcementStrict, v.Name, config.CheckSubresources, finding.Change{Kind: "scaleAdded", New: path},
				"scale subresource added: objects whose %s is not an integer from 0 to 2147483647 can no longer be written", path)
		}
	}
	if path := deref(sc.LabelSelectorPath); path != "" {
		if s, storable := schemaAtPath(root, path, keepsAll); storable && (s == nil || s.Type != "string" || s.Nullable) {
			p.CRDLevel(config.EnforcementStrict, v.Name, config.CheckSubresources, finding.Change{Kind: "scaleAdded", New: path},
				"scale subresource added: objects whose %s is not a string can no longer be written", path)
		}
	}
}

// schemaAtPath follows a scale path (.spec.replicas) through the
// properties of schema root. storable is false when no stored object can
// hold a value there (the apiserver prunes it); s is nil when a value
// there is held to no schema (unknown fields kept).
func schemaAtPath(root *apiextv1.JSONSchemaProps, path string, keepsAll bool) (s *apiextv1.JSONSchemaProps, storable bool) {
	s = root
	for _, name := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		if s == nil {
			return nil, true
		}
		if prop, ok := s.Properties[name]; ok {
			s = &prop
			continue
		}
		if implied, _, _ := implicitSchema(s, false, false, keepsAll, name); implied != nil {
			s = implied
			if implied == &anySchema {
				s = nil
			}
			continue
		}
		return nil, false
	}
	return s, true
}

// onlyReplicas reports whether s admits only values the scale
// subresource accepts as a replica count: integers from 0 to 2147483647.
func onlyReplicas(s *apiextv1.JSONSchemaProps) bool {
	return s != nil && s.Type == "integer" && !s.Nullable && !s.XIntOrString &&
		s.Minimum != nil && (*s.Minimum >= 0 || s.ExclusiveMinimum && *s.Minimum >= -1) &&
		s.Maximum != nil && *s.Maximum <= math.MaxInt32
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

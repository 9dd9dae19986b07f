package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Compare compares the old CRD (from the cluster, or an old file) with the
// new one and returns every finding, sorted, with the policy of cfg applied.
// old's status.storedVersions is used when set; otherwise old's storage
// version counts as stored.
//
// It runs the CRD-level checks, then the property checks over every version
// present in both CRDs (sameVersion) and over the served versions of the
// new CRD (servedVersion).
func Compare(old, new *apiextv1.CustomResourceDefinition, cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, new.Name)
	return p.Judged(CompareWith(p, old, new))
}

// CompareWith is Compare under the pair's policy p (of new's name),
// before the findings are judged: the severity their checks give them,
// which waivers, acceptances and the stored objects are judged from, once
// (finding.Policy.Apply).
func CompareWith(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) []finding.Finding {
	checkScope(p, old, new)
	checkStoredVersionRemoval(p, old, new)
	checkServedVersionRemoval(p, old, new)
	checkVersionLifecycle(p, old, new)
	checkSubresources(p, old, new)
	checkSelectableFields(p, old, new)
	checkCRDPreserveUnknownFields(p, old, new)
	checkSameVersions(p, old, new)
	checkServedVersions(p, old, new)
	checkStoragePruning(p, old, new)
	finding.SortFindings(p.Findings)
	return p.Findings
}

// checkSameVersions compares each version present in both CRDs with itself.
// existingFieldRemoval is a CRD-level check (checks.crd): it still runs when
// the sameVersion property checks are disabled.
func checkSameVersions(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) {
	vc := &p.Settings.Checks.SameVersion
	fieldRemoval := p.Settings.Checks.CRD.ExistingFieldRemoval.Enabled
	if !vc.Enabled && !fieldRemoval {
		return
	}
	sink := p.Add
	if !vc.Enabled {
		sink = func(c finding.Draft) {
			if c.Check == config.CheckExistingFieldRemoval {
				p.Add(c)
			}
		}
	}
	// Versions missing from new are covered by storedVersionRemoval and
	// servedVersionRemoval.
	forVersionsInBoth(old, new, func(ov, nv *apiextv1.CustomResourceDefinitionVersion) {
		pr := &pairRun{
			vc: vc, version: ov.Name,
			fieldRemoval: fieldRemoval,
			unhandled:    p.Settings.FailDecisionFor(config.FailUnhandledChange, vc).Decision,
			oldKeepsAll:  old.Spec.PreserveUnknownFields,
			newKeepsAll:  new.Spec.PreserveUnknownFields,
			kubeVersion:  p.Settings.KubeVersion,
			sink:         sink,
		}
		pr.compareSchemas(VersionSchema(ov), VersionSchema(nv))
	})
}

// forVersionsInBoth calls f with each version of old (in spec order) that
// new has too, and new's version of the same name.
func forVersionsInBoth(old, new *apiextv1.CustomResourceDefinition, f func(ov, nv *apiextv1.CustomResourceDefinitionVersion)) {
	newByName := VersionsByName(new)
	for i := range old.Spec.Versions {
		ov := &old.Spec.Versions[i]
		if nv, ok := newByName[ov.Name]; ok {
			f(ov, nv)
		}
	}
}

func VersionsByName(crd *apiextv1.CustomResourceDefinition) map[string]*apiextv1.CustomResourceDefinitionVersion {
	m := make(map[string]*apiextv1.CustomResourceDefinitionVersion, len(crd.Spec.Versions))
	for i := range crd.Spec.Versions {
		m[crd.Spec.Versions[i].Name] = &crd.Spec.Versions[i]
	}
	return m
}

func VersionSchema(v *apiextv1.CustomResourceDefinitionVersion) *apiextv1.JSONSchemaProps {
	if v == nil || v.Schema == nil {
		return nil
	}
	return v.Schema.OpenAPIV3Schema
}

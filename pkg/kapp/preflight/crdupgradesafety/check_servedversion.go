package crdupgradesafety

import (
	"fmt"
	"slices"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"
)

// checkServedVersions compares every pair of served versions of the new CRD
// with the property checks: without a conversion webhook the apiserver
// serves the same stored object under each of them, so they must agree.
// Skipped under a webhook conversion unless ignoreConversion is false. Only
// incompatibilities the old CRD did not already have are reported.
func checkServedVersions(p *policy, old, new *apiextv1.CustomResourceDefinition) {
	sv := &p.cfg.Checks.ServedVersion
	if !sv.Enabled || (sv.IgnoreConversion && hasWebhookConversion(new)) {
		return
	}
	// Incompatibilities the old CRD already served are not news, unless a
	// webhook bridged them there and is gone now.
	already := map[string]struct{}{}
	if !hasWebhookConversion(old) || !sv.IgnoreConversion {
		for _, f := range servedPairFindings(p.cfg, sv, old) {
			already[f.key()] = struct{}{}
		}
	}
	for _, f := range servedPairFindings(p.cfg, sv, new) {
		if _, ok := already[f.key()]; !ok {
			p.add(f.version, f.field, config.CheckServedVersion, fmt.Sprintf("[%s] %s", f.check, f.message))
		}
	}
}

type pairFinding struct{ version, field, check, message string }

func (f pairFinding) key() string {
	return f.version + "\x00" + f.field + "\x00" + f.check + "\x00" + f.message
}

// servedPairFindings returns the raw incompatibilities between each pair of
// served versions of crd, each pair ordered by Kubernetes version priority
// (v1alpha1 -> v1beta1 -> v1), not by spec order: reordering the versions
// list must not turn an incompatibility the old CRD had into a new one.
func servedPairFindings(cfg *config.CRDUpgradeSafety, sv *config.ServedVersionChecks, crd *apiextv1.CustomResourceDefinition) []pairFinding {
	var served []*apiextv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Served {
			served = append(served, &crd.Spec.Versions[i])
		}
	}
	slices.SortStableFunc(served, func(a, b *apiextv1.CustomResourceDefinitionVersion) int {
		return version.CompareKubeAwareVersionStrings(a.Name, b.Name)
	})
	var out []pairFinding
	for i := 0; i < len(served); i++ {
		for j := i + 1; j < len(served); j++ {
			pr := &pairRun{
				vc: &sv.VersionChecks, version: served[i].Name + " -> " + served[j].Name,
				fieldRemoval: true,
				failMode:     effectiveFailMode(cfg, &sv.VersionChecks),
				emit: func(version, field, check, message string) {
					out = append(out, pairFinding{version, field, check, message})
				},
			}
			pr.compareSchemas(versionSchema(served[i]), versionSchema(served[j]))
		}
	}
	return out
}

func hasWebhookConversion(crd *apiextv1.CustomResourceDefinition) bool {
	c := crd.Spec.Conversion
	return c != nil && c.Strategy == apiextv1.WebhookConverter
}

package checks

import (
	"slices"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"
)

// The descriptor of servedVersion: served versions that differ without a conversion webhook.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckServedVersion}, Runs: finding.RunsOnVersionPair, Remedy: finding.RemedyConversionWebhook})

// checkServedVersions compares every pair of served versions of the new CRD
// with the property checks: without a conversion webhook the apiserver
// serves the same stored object under each of them, so they must agree.
// Skipped under a webhook conversion unless ignoreConversion is false.
//
// Only incompatibilities the old CRD did not already have are reported,
// judged by content, not by version names: a pair of schemas the old CRD
// already served side by side brings nothing new (so a new version whose
// schema equals an existing one adds no findings), and two versions with
// equal schemas are compatible. For a pair with a schema the old CRD did
// not serve, the findings the old CRD had for the same pair of version
// names are left out.
func checkServedVersions(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) {
	sv := &p.Settings.Checks.ServedVersion
	if !sv.Enabled || (sv.IgnoreConversion && hasWebhookConversion(new)) {
		return
	}
	newServed := servedByPriority(new)
	if len(newServed) < 2 {
		return
	}
	var classes schemaClasses
	newClass := make([]int, len(newServed))
	for i, v := range newServed {
		newClass[i] = classes.of(VersionSchema(v))
	}
	// What the old CRD served side by side is not news, unless a webhook
	// bridged it there and is gone now.
	bridged := hasWebhookConversion(old) && sv.IgnoreConversion
	oldServed := servedByPriority(old)
	oldHad := map[int]bool{}
	if !bridged {
		for _, v := range oldServed {
			oldHad[classes.of(VersionSchema(v))] = true
		}
	}
	var already map[pairFacts]struct{} // by version names, built when first needed
	for i := range newServed {
		for j := i + 1; j < len(newServed); j++ {
			ci, cj := newClass[i], newClass[j]
			if ci == cj || oldHad[ci] && oldHad[cj] {
				continue
			}
			changes := servedPairChanges(p.Settings, sv, new, newServed[i], newServed[j])
			if len(changes) > 0 && already == nil {
				already = map[pairFacts]struct{}{}
				if !bridged {
					for a := range oldServed {
						for b := a + 1; b < len(oldServed); b++ {
							for _, c := range servedPairChanges(p.Settings, sv, old, oldServed[a], oldServed[b]) {
								already[pairFactsOf(c)] = struct{}{}
							}
						}
					}
				}
			}
			for _, c := range changes {
				if _, ok := already[pairFactsOf(c)]; ok {
					continue
				}
				c.Message = "[" + c.Check + "] " + c.Message
				c.Fact.Kind = c.Check + "/" + c.Fact.Kind
				c.Check = config.CheckServedVersion
				p.Add(c)
			}
		}
	}
}

// pairFacts identifies an incompatibility of a pair of served versions by
// its facts: the pair, the field, the property check and the change (kind,
// old and new), never by its words, so that a new incompatibility worded
// like one the old CRD had is still reported.
type pairFacts struct {
	version, pairVersion string
	field                schemapath.Path
	check                string
	fact                 finding.Change
}

func pairFactsOf(c finding.Draft) pairFacts {
	return pairFacts{version: c.Version, pairVersion: c.PairVersion, field: c.Field, check: c.Check, fact: c.Fact}
}

// servedByPriority returns the served versions of crd ordered by Kubernetes
// version priority (v1alpha1 -> v1beta1 -> v1), not by spec order:
// reordering the versions list must not turn an incompatibility the old
// CRD had into a new one.
func servedByPriority(crd *apiextv1.CustomResourceDefinition) []*apiextv1.CustomResourceDefinitionVersion {
	var served []*apiextv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Served {
			served = append(served, &crd.Spec.Versions[i])
		}
	}
	slices.SortStableFunc(served, func(a, b *apiextv1.CustomResourceDefinitionVersion) int {
		return version.CompareKubeAwareVersionStrings(a.Name, b.Name)
	})
	return served
}

// servedPairChanges returns the incompatibilities between served versions
// a -> b of crd, each named by the pair ("v1beta1 -> v1") and the property
// check that found it.
func servedPairChanges(cfg *config.Settings, sv *config.ServedVersionChecks, crd *apiextv1.CustomResourceDefinition,
	a, b *apiextv1.CustomResourceDefinitionVersion) []finding.Draft {

	var out []finding.Draft
	pr := &pairRun{
		vc: &sv.VersionChecks, version: a.Name, pairVersion: b.Name,
		fieldRemoval: true,
		unhandled:    cfg.FailDecisionFor(config.FailUnhandledChange, &sv.VersionChecks).Decision,
		oldKeepsAll:  crd.Spec.PreserveUnknownFields,
		newKeepsAll:  crd.Spec.PreserveUnknownFields,
		kubeVersion:  cfg.KubeVersion,
		sink:         func(c finding.Draft) { out = append(out, c) },
	}
	pr.compareSchemas(VersionSchema(a), VersionSchema(b))
	return out
}

// schemaClasses numbers schemas by content: schemas equal but for
// documentation (sameSchema) get the same number. A CRD has a handful of
// versions, so a linear scan of the representatives is enough.
type schemaClasses []*apiextv1.JSONSchemaProps

func (c *schemaClasses) of(s *apiextv1.JSONSchemaProps) int {
	for i, rep := range *c {
		if rep == s || SameSchema(rep, s) {
			return i
		}
	}
	*c = append(*c, s)
	return len(*c) - 1
}

func hasWebhookConversion(crd *apiextv1.CustomResourceDefinition) bool {
	c := crd.Spec.Conversion
	return c != nil && c.Strategy == apiextv1.WebhookConverter
}

package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of conversionOrdering: a CRD update that needs its
// conversion webhook's new code, in a change set that may apply it before
// the webhook's workloads (facts of kapp's change graph, judged offline).
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckConversionOrdering}, Runs: finding.RunsOnCRD,
	Remedy: finding.RemedyOrderWorkloadFirst})

// ConversionNeedOf says whether updating old to new needs new conversion
// code, and why (the first reason, in the order of the constants; version
// names the version it is about). The rule: only an update (old not nil)
// to a CRD whose new conversion strategy is Webhook, and only when the
// conversion configuration changes, or the versions change in a way the
// old code cannot serve: the storage version moves, a version is added, a
// version's schema changes. Removing or unserving a version, and every
// change of a CRD without a webhook, needs no new code. A create needs
// none either: no object is stored yet.
func ConversionNeedOf(old, new *apiextv1.CustomResourceDefinition) (need finding.ConversionNeed, version string) {
	if old == nil || new == nil || new.Spec.Conversion == nil || new.Spec.Conversion.Strategy != apiextv1.WebhookConverter {
		return "", ""
	}
	if !sameConversion(old.Spec.Conversion, new.Spec.Conversion) {
		return finding.NeedConversionChanged, ""
	}
	if o, n := storageVersion(old), storageVersion(new); o != n {
		return finding.NeedStorageVersionChanged, n
	}
	oldVersions := map[string]*apiextv1.CustomResourceValidation{}
	for i := range old.Spec.Versions {
		oldVersions[old.Spec.Versions[i].Name] = old.Spec.Versions[i].Schema
	}
	for _, v := range new.Spec.Versions {
		if _, ok := oldVersions[v.Name]; !ok {
			return finding.NeedVersionAdded, v.Name
		}
	}
	for _, v := range new.Spec.Versions {
		if !sameValidation(oldVersions[v.Name], v.Schema) {
			return finding.NeedSchemaChanged, v.Name
		}
	}
	return "", ""
}

func storageVersion(crd *apiextv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

func sameValidation(a, b *apiextv1.CustomResourceValidation) bool {
	return SameSchema(validationSchema(a), validationSchema(b))
}

func validationSchema(v *apiextv1.CustomResourceValidation) *apiextv1.JSONSchemaProps {
	if v == nil {
		return nil
	}
	return v.OpenAPIV3Schema
}

// sameConversion compares two conversion settings field by field (the
// CA bundle by bytes).
func sameConversion(a, b *apiextv1.CustomResourceConversion) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Strategy != b.Strategy || (a.Webhook == nil) != (b.Webhook == nil) {
		return false
	}
	if a.Webhook == nil {
		return true
	}
	if !slices.Equal(a.Webhook.ConversionReviewVersions, b.Webhook.ConversionReviewVersions) {
		return false
	}
	ca, cb := a.Webhook.ClientConfig, b.Webhook.ClientConfig
	if ca == nil || cb == nil {
		return ca == cb
	}
	if !equalPtr(ca.URL, cb.URL) || string(ca.CABundle) != string(cb.CABundle) || (ca.Service == nil) != (cb.Service == nil) {
		return false
	}
	if ca.Service == nil {
		return true
	}
	sa, sb := ca.Service, cb.Service
	return sa.Namespace == sb.Namespace && sa.Name == sb.Name && equalPtr(sa.Path, sb.Path) && portOf(sa) == portOf(sb)
}

// portOf is a service reference's port, 443 when unset (the apiserver's
// default).
func portOf(s *apiextv1.ServiceReference) int32 {
	if s.Port == nil {
		return 443
	}
	return *s.Port
}

// ConversionOrderingFindings is the conversionOrdering check of one CRD
// update in a kapp deploy: when the update needs the webhook's new code
// (ConversionNeedOf) and the change set rolls out workloads that serve the
// webhook without the CRD's change waiting for them (o, from kapp's change
// graph), an error by default: kapp may update the CRD while the old code
// still answers, so the apiserver's conversions fail (a version the old
// code does not know) or run the old code against the new schema, and
// what they write is stored. None when o is nil, every workload is
// ordered, the update needs no new code or the check is disabled.
func ConversionOrderingFindings(old, new *apiextv1.CustomResourceDefinition, o *finding.ConversionOrdering, cfg *config.Settings) []finding.Finding {
	if o == nil || new == nil {
		return nil
	}
	p := finding.NewPolicy(cfg, new.Name)
	if !p.Settings.Checks.CRD.ConversionOrdering.Enabled {
		return nil
	}
	unordered := o.Unordered()
	if len(unordered) == 0 {
		return nil
	}
	need, version := ConversionNeedOf(old, new)
	if need == "" {
		return nil
	}
	refs := make([]string, len(unordered))
	for i, w := range unordered {
		refs[i] = w.Ref()
	}
	facts := *o
	facts.Workloads = slices.Clone(o.Workloads)
	facts.Need, facts.NeedVersion = need, version
	p.CRDLevelWith(config.EnforcementStrict, "", config.CheckConversionOrdering,
		&finding.Remedy{Action: finding.RemedyOrderWorkloadFirst, Resources: refs, Detail: o.Group},
		finding.Change{Kind: "workloadNotOrdered", Old: strings.TrimSpace(string(need) + " " + version), New: o.Service + ": " + strings.Join(refs, ", ")},
		"%s: the conversion webhook's Service %s is served by %s, which the change set rolls out, but kapp may update the CRD before %s",
		needText(need, version), o.Service, strings.Join(refs, ", "), rolledOut(len(refs)))
	for i := range p.Findings {
		p.Findings[i].Ordering = &facts
	}
	return p.Judged(p.Findings)
}

func rolledOut(n int) string {
	if n == 1 {
		return "it is rolled out"
	}
	return "they are rolled out"
}

// needText is the check's statement of why the update needs the new code.
func needText(need finding.ConversionNeed, version string) string {
	switch need {
	case finding.NeedConversionChanged:
		return "the conversion webhook configuration changes"
	case finding.NeedStorageVersionChanged:
		return fmt.Sprintf("the storage version becomes %q", version)
	case finding.NeedVersionAdded:
		return fmt.Sprintf("version %q is added", version)
	case finding.NeedSchemaChanged:
		return fmt.Sprintf("the schema of version %q changes", version)
	}
	return string(need)
}

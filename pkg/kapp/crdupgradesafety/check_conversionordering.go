package crdupgradesafety

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ConversionOrdering is what a kapp change set holds about the workloads
// that serve a CRD's conversion webhook (the Service its new
// spec.conversion.webhook.clientConfig names): facts the kapp hook reads
// from kapp's change graph. The engine knows nothing of kapp: it judges
// whether the update needs the webhook's new code (ConversionNeedOf) and
// makes the finding.
type ConversionOrdering struct {
	// Service is the webhook's Service, namespace/name.
	Service string
	// Workloads are the workloads of the change set that it creates or
	// updates (upserts) and whose pod template labels the Service's
	// selector matches, sorted by kind, namespace and name.
	Workloads []OrderedWorkload
	// Group is the kapp change group the remedy puts the workloads in
	// (derived from the CRD's name), and RuleAnnotation the annotation key
	// of the CRD that carries the rule "upsert after upserting <Group>"
	// ("" when the CRD already carries that rule).
	Group          string
	RuleAnnotation string
	// Need is why the update needs the webhook's new code, and
	// NeedVersion the version it is about ("" for a conversion change);
	// set by the engine (ConversionOrderingFindings).
	Need        ConversionNeed
	NeedVersion string
}

// OrderedWorkload is one workload that serves a conversion webhook.
type OrderedWorkload struct {
	Kind, Namespace, Name string
	// Ordered: the CRD's change waits for this workload's change in kapp's
	// change graph (transitively): kapp applies it and waits for it (a
	// Deployment available) before it updates the CRD.
	Ordered bool
	// GroupAnnotation is the annotation key the remedy adds to the
	// workload with the value Group ("" when it already carries it).
	GroupAnnotation string
}

// Ref is the workload as outputs name it: "Deployment default/widget-webhook".
func (w OrderedWorkload) Ref() string {
	if w.Namespace == "" {
		return w.Kind + " " + w.Name
	}
	return w.Kind + " " + w.Namespace + "/" + w.Name
}

// Unordered are the workloads the CRD's change does not wait for.
func (o *ConversionOrdering) Unordered() []OrderedWorkload {
	var out []OrderedWorkload
	for _, w := range o.Workloads {
		if !w.Ordered {
			out = append(out, w)
		}
	}
	return out
}

// ConversionNeed is why a CRD update needs its conversion webhook's new
// code: what the apiserver starts asking of the webhook the moment the
// CRD changes.
type ConversionNeed string

const (
	// NeedConversionChanged: spec.conversion changes (the strategy, the
	// webhook's clientConfig or its conversionReviewVersions): the
	// apiserver calls another endpoint, or speaks to it differently.
	NeedConversionChanged ConversionNeed = "conversionChanged"
	// NeedStorageVersionChanged: the storage version changes: every write
	// converts to it.
	NeedStorageVersionChanged ConversionNeed = "storageVersionChanged"
	// NeedVersionAdded: a new version: the old code does not know it.
	NeedVersionAdded ConversionNeed = "versionAdded"
	// NeedSchemaChanged: the schema of a version changes: the old code
	// converts to the old schema, and the new one prunes what it lacks.
	NeedSchemaChanged ConversionNeed = "schemaChanged"
)

// ConversionNeedOf says whether updating old to new needs new conversion
// code, and why (the first reason, in the order of the constants; version
// names the version it is about). The rule: only an update (old not nil)
// to a CRD whose new conversion strategy is Webhook, and only when the
// conversion configuration changes, or the versions change in a way the
// old code cannot serve: the storage version moves, a version is added, a
// version's schema changes. Removing or unserving a version, and every
// change of a CRD without a webhook, needs no new code. A create needs
// none either: no object is stored yet.
func ConversionNeedOf(old, new *apiextv1.CustomResourceDefinition) (need ConversionNeed, version string) {
	if old == nil || new == nil || new.Spec.Conversion == nil || new.Spec.Conversion.Strategy != apiextv1.WebhookConverter {
		return "", ""
	}
	if !sameConversion(old.Spec.Conversion, new.Spec.Conversion) {
		return NeedConversionChanged, ""
	}
	if o, n := storageVersion(old), storageVersion(new); o != n {
		return NeedStorageVersionChanged, n
	}
	oldVersions := map[string]*apiextv1.CustomResourceValidation{}
	for i := range old.Spec.Versions {
		oldVersions[old.Spec.Versions[i].Name] = old.Spec.Versions[i].Schema
	}
	for _, v := range new.Spec.Versions {
		if _, ok := oldVersions[v.Name]; !ok {
			return NeedVersionAdded, v.Name
		}
	}
	for _, v := range new.Spec.Versions {
		if !sameValidation(oldVersions[v.Name], v.Schema) {
			return NeedSchemaChanged, v.Name
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
	return sameSchema(validationSchema(a), validationSchema(b))
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
func ConversionOrderingFindings(old, new *apiextv1.CustomResourceDefinition, o *ConversionOrdering, cfg *config.Settings) []Finding {
	if o == nil || new == nil {
		return nil
	}
	p := newPolicy(cfg, new.Name)
	if !p.cfg.Checks.CRD.ConversionOrdering.Enabled {
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
	p.crdLevelWith(config.EnforcementStrict, "", config.CheckConversionOrdering,
		&Remedy{Action: RemedyOrderWorkloadFirst, Resources: refs, Detail: o.Group},
		Change{Kind: "workloadNotOrdered", Old: strings.TrimSpace(string(need) + " " + version), New: o.Service + ": " + strings.Join(refs, ", ")},
		"%s: the conversion webhook's Service %s is served by %s, which the change set rolls out, but kapp may update the CRD before %s",
		needText(need, version), o.Service, strings.Join(refs, ", "), rolledOut(len(refs)))
	for i := range p.findings {
		p.findings[i].Ordering = &facts
	}
	return p.findings
}

func rolledOut(n int) string {
	if n == 1 {
		return "it is rolled out"
	}
	return "they are rolled out"
}

// needText is the check's statement of why the update needs the new code.
func needText(need ConversionNeed, version string) string {
	switch need {
	case NeedConversionChanged:
		return "the conversion webhook configuration changes"
	case NeedStorageVersionChanged:
		return fmt.Sprintf("the storage version becomes %q", version)
	case NeedVersionAdded:
		return fmt.Sprintf("version %q is added", version)
	case NeedSchemaChanged:
		return fmt.Sprintf("the schema of version %q changes", version)
	}
	return string(need)
}

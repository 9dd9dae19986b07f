package finding

// ConversionOrdering is what a kapp change set holds about the workloads
// that serve a CRD's conversion webhook (the Service its new
// spec.conversion.webhook.clientConfig names): facts the kapp hook reads
// from kapp's change graph. The engine knows nothing of kapp: it judges
// whether the update needs the webhook's new code (ConversionNeedOf) and
// makes the finding.
type ConversionOrdering struct {
	// Service is the webhook's Service, namespace/name; for a url webhook
	// "" and URL its URL.
	Service string
	URL     string
	// Workloads are the workloads of the change set that it creates or
	// updates (upserts) and whose pod template labels the Service's
	// selector matches, sorted by kind, namespace and name. For a url
	// webhook (nothing ties a URL to a workload) they are the workloads the
	// change set upserts and the CRD's change waits for (all Ordered).
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
	// AdmissionWebhook is the ValidatingWebhookConfiguration that
	// registers crd-upgrade-safety's admission webhook for CRD updates on
	// the cluster ("" when none does): the one that judges the conversion
	// when kapp updates the CRD (read by the kapp hook only when Shipped
	// holds a workload).
	AdmissionWebhook string
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

// Shipped are the workloads that serve the webhook, changed in this
// deploy and rolled out before the CRD changes (Ordered): the conversion
// code that answers once the CRD changes is theirs, not the code that
// answers now. Empty: the code running now is the code (or kapp may update
// the CRD before the new code runs: conversionOrdering).
func (o *ConversionOrdering) Shipped() []OrderedWorkload {
	if o == nil {
		return nil
	}
	var out []OrderedWorkload
	for _, w := range o.Workloads {
		if w.Ordered {
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

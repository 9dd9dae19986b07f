package preflight

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"carvel.dev/kapp/pkg/kapp/clusterapply"
	ctldgraph "carvel.dev/kapp/pkg/kapp/diffgraph"
	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// kapp's annotations of change groups and change rules
// (diffgraph/change.go): the key itself, or the key followed by "." and any
// suffix, so that a resource may carry several.
const (
	ChangeGroupAnnotation = "kapp.k14s.io/change-group"
	ChangeRuleAnnotation  = "kapp.k14s.io/change-rule"
	// orderingSuffix is the suffix of the annotation the remedy proposes
	// when the resource already carries the plain key.
	orderingSuffix = ".conversion-webhook"
	// OrderingGroupPrefix starts the change group the remedy proposes for
	// a CRD's conversion webhook workloads; the CRD's name follows.
	OrderingGroupPrefix = "conversion-webhooks.crd-upgrade-safety/"
)

// OrderingGroup is the kapp change group the conversionOrdering remedy puts
// the workloads serving crdName's conversion webhook in.
func OrderingGroup(crdName string) string { return OrderingGroupPrefix + crdName }

// workloadPodLabels are the kinds whose pods may serve a webhook, and where
// their pods' labels are: the pod template of the apps workloads, the Pod's
// own labels.
var workloadPodLabels = map[[2]string][]string{
	{"apps", "Deployment"}:  {"spec", "template", "metadata", "labels"},
	{"apps", "StatefulSet"}: {"spec", "template", "metadata", "labels"},
	{"apps", "DaemonSet"}:   {"spec", "template", "metadata", "labels"},
	{"apps", "ReplicaSet"}:  {"spec", "template", "metadata", "labels"},
	{"", "Pod"}:             {"metadata", "labels"},
}

// ServiceSelectorReader is the capability of a Cluster to read the
// selector of a Service (*kube.Client has it): found is false when there is
// no such Service.
type ServiceSelectorReader interface {
	ServiceSelector(ctx context.Context, namespace, name string) (selector map[string]string, found bool, err error)
}

// AdmissionWebhookFinder is the capability of a Cluster to say whether
// crd-upgrade-safety's admission webhook judges CRD updates (*kube.Client
// has it): the name of the ValidatingWebhookConfiguration that registers it
// for them, "" when none does.
type AdmissionWebhookFinder interface {
	CRDAdmissionWebhook(ctx context.Context) (string, error)
}

var _ AdmissionWebhookFinder = &kube.Client{}

// orderConversions sets the Ordering of each pair of plan whose new CRD has
// a conversion webhook (conversionOrdering, and the apply-time verdict of
// conversionWebhook), read from kapp's change graph and, for a Service the
// change set leaves unchanged (kapp's graph holds no change for it), from
// the cluster. When a pair's webhook code ships in this deploy (Shipped),
// the cluster is asked once which admission webhook judges CRD updates.
func orderConversions(ctx context.Context, graph *ctldgraph.ChangeGraph, plan *evaluation.Plan, cluster func() (evaluation.Cluster, error)) error {
	pairs := map[string]int{}
	for i, p := range plan.Pairs {
		pairs[p.New.Name] = i
	}
	lookup := func(ns, name string) (map[string]string, bool, error) {
		if cluster == nil {
			return nil, false, nil
		}
		c, err := cluster()
		if err != nil {
			return nil, false, err
		}
		r, ok := c.(ServiceSelectorReader)
		if !ok {
			return nil, false, nil
		}
		return r.ServiceSelector(ctx, ns, name)
	}
	var shipped []int
	for _, change := range graph.All() {
		res := change.Change.Resource()
		i, ok := pairs[res.Name()]
		if !IsCRD(res) || !ok || change.Change.Op() != ctldgraph.ActualChangeOpUpsert {
			continue
		}
		o, err := conversionOrdering(graph, change, res, lookup)
		if err != nil {
			return fmt.Errorf("CRD %s: conversion webhook: %w", res.Name(), err)
		}
		plan.Pairs[i].Ordering = o
		if len(o.Shipped()) > 0 {
			shipped = append(shipped, i)
		}
	}
	if len(shipped) == 0 || cluster == nil {
		return nil
	}
	c, err := cluster()
	if err != nil {
		return err
	}
	finder, ok := c.(AdmissionWebhookFinder)
	if !ok {
		return nil
	}
	name, err := finder.CRDAdmissionWebhook(ctx)
	var denied *kube.ForbiddenError
	if errors.As(err, &denied) {
		// Not known to be there: as if it were not (failMode decides).
		name, err = "", nil
	}
	if err != nil {
		return fmt.Errorf("finding the admission webhook that judges the conversion at apply time: %w", err)
	}
	for _, i := range shipped {
		p := &plan.Pairs[i]
		p.Ordering.AdmissionWebhook = name
		if name != "" && p.Send != nil {
			// The dry run of the update reaches that admission webhook
			// too, before the rollout: it says so (honoured on dry runs
			// only), so the webhook does not probe the code running now.
			send, err := evaluation.MarkApplyTime(p.Send, p.Ordering)
			if err != nil {
				return err
			}
			p.Send = send
		}
	}
	return nil
}

// conversionOrdering reads what the change set holds about the workloads
// that serve the conversion webhook of the CRD that crdChange upserts (crd,
// its new definition): nil when the CRD's conversion is not a webhook, or
// its Service is neither in the change set nor found by lookup (the
// cluster). A url cannot be tied to a workload: for a url webhook the
// workloads are every workload the change set upserts that the CRD's
// change waits for (urlOrdering). Its
// workloads are the change set's upserts of a workload kind in the
// Service's namespace whose pods' labels the Service's selector matches;
// each is ordered when kapp's graph makes the CRD's change wait for it,
// directly or transitively (kapp applies a change and waits for it before
// the changes that wait for it). The cluster is asked only when the change
// set upserts a workload in the Service's namespace.
func conversionOrdering(graph *ctldgraph.ChangeGraph, crdChange *ctldgraph.Change, crd ctlres.Resource,
	lookup func(ns, name string) (map[string]string, bool, error)) (*finding.ConversionOrdering, error) {

	obj := crd.UnstructuredObject()
	if s, _, _ := unstructured.NestedString(obj, "spec", "conversion", "strategy"); s != "Webhook" {
		return nil, nil
	}
	svc, ok, _ := unstructured.NestedMap(obj, "spec", "conversion", "webhook", "clientConfig", "service")
	if !ok {
		if url, _, _ := unstructured.NestedString(obj, "spec", "conversion", "webhook", "clientConfig", "url"); url != "" {
			return urlOrdering(graph, crdChange, crd, url), nil
		}
		return nil, nil
	}
	ns, _ := svc["namespace"].(string)
	name, _ := svc["name"].(string)

	var candidates []*ctldgraph.Change
	for _, c := range graph.All() {
		res := c.Change.Resource()
		if _, isWorkload := workloadPodLabels[[2]string{res.APIGroup(), res.Kind()}]; isWorkload && res.Namespace() == ns && upserts(c.Change) {
			candidates = append(candidates, c)
		}
	}
	var sel map[string]string
	if service := findService(graph, ns, name); service != nil {
		sel, _, _ = unstructured.NestedStringMap(service.UnstructuredObject(), "spec", "selector")
	} else {
		if len(candidates) == 0 {
			return nil, nil // nothing of the change set can serve it
		}
		var found bool
		var err error
		if sel, found, err = lookup(ns, name); err != nil || !found {
			return nil, err
		}
	}

	group := OrderingGroup(crd.Name())
	o := &finding.ConversionOrdering{
		Service:        ns + "/" + name,
		Group:          group,
		RuleAnnotation: annotationFor(crd.Annotations(), ChangeRuleAnnotation, "upsert after upserting "+group),
	}
	if len(sel) == 0 {
		return o, nil // no selector: the Service's endpoints are not pods'
	}
	selector := labels.SelectorFromSet(sel)
	for _, c := range candidates {
		res := c.Change.Resource()
		podLabels, _, _ := unstructured.NestedStringMap(res.UnstructuredObject(), workloadPodLabels[[2]string{res.APIGroup(), res.Kind()}]...)
		if len(podLabels) == 0 || !selector.Matches(labels.Set(podLabels)) {
			continue
		}
		o.Workloads = append(o.Workloads, finding.OrderedWorkload{
			Kind: res.Kind(), Namespace: res.Namespace(), Name: res.Name(),
			Ordered:         crdChange.IsTransitivelyWaitingFor(c),
			GroupAnnotation: annotationFor(res.Annotations(), ChangeGroupAnnotation, group),
		})
	}
	slices.SortFunc(o.Workloads, func(a, b finding.OrderedWorkload) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return o, nil
}

// urlOrdering is the ordering facts of a CRD whose conversion webhook is a
// url: the workloads the change set creates or updates and the CRD's
// change waits for (kapp rolls each out and waits for it first), in any
// namespace; nil when there are none.
func urlOrdering(graph *ctldgraph.ChangeGraph, crdChange *ctldgraph.Change, crd ctlres.Resource, url string) *finding.ConversionOrdering {
	o := &finding.ConversionOrdering{URL: url, Group: OrderingGroup(crd.Name())}
	for _, c := range graph.All() {
		res := c.Change.Resource()
		if _, isWorkload := workloadPodLabels[[2]string{res.APIGroup(), res.Kind()}]; !isWorkload || !upserts(c.Change) ||
			!crdChange.IsTransitivelyWaitingFor(c) {
			continue
		}
		o.Workloads = append(o.Workloads, finding.OrderedWorkload{Kind: res.Kind(), Namespace: res.Namespace(), Name: res.Name(), Ordered: true})
	}
	if len(o.Workloads) == 0 {
		return nil
	}
	slices.SortFunc(o.Workloads, func(a, b finding.OrderedWorkload) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return o
}

// findService is the resource of the change set's Service ns/name (any
// change but a delete), nil when the change set has none.
func findService(graph *ctldgraph.ChangeGraph, ns, name string) ctlres.Resource {
	for _, c := range graph.All() {
		res := c.Change.Resource()
		if res.APIGroup() == "" && res.Kind() == "Service" && res.Namespace() == ns && res.Name() == name &&
			c.Change.Op() != ctldgraph.ActualChangeOpDelete {
			return res
		}
	}
	return nil
}

// upserts reports whether kapp creates or updates the resource of the
// change (not a change it only waits for: kapp.k14s.io/exists).
func upserts(ac ctldgraph.ActualChange) bool {
	if ac.Op() != ctldgraph.ActualChangeOpUpsert {
		return false
	}
	if kc, ok := ac.(kappChange); ok {
		op := kc.ApplyOp()
		return op == clusterapply.ClusterChangeApplyOpAdd || op == clusterapply.ClusterChangeApplyOpUpdate
	}
	return true
}

// annotationFor is the annotation key that would give a resource with the
// given annotations the kapp group or rule value under key (kapp's
// ChangeGroupAnnotation or ChangeRuleAnnotation): "" when one of its key's
// annotations already holds value; else key itself, or key with a suffix
// when key is taken.
func annotationFor(annotations map[string]string, key, value string) string {
	for k, v := range annotations {
		if (k == key || strings.HasPrefix(k, key+".")) && v == value {
			return ""
		}
	}
	if _, taken := annotations[key]; !taken {
		return key
	}
	return key + orderingSuffix
}

package kube

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AdmissionWebhookName is the name of crd-upgrade-safety's admission
// webhook in the ValidatingWebhookConfiguration of every way it is
// installed (examples/webhook, the Helm chart, the Carvel package).
const AdmissionWebhookName = "validate.crd-upgrade-safety.kapp.k14s.io"

var validatingWebhookConfigurationGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1",
	Resource: "validatingwebhookconfigurations"}

// CRDAdmissionWebhook is the name of the ValidatingWebhookConfiguration
// that registers crd-upgrade-safety's admission webhook
// (AdmissionWebhookName) for UPDATE of customresourcedefinitions (the first
// by name), "" when none does. Its selectors and match conditions are not
// read: the registration is the fact, not which CRDs it covers. A list the
// identity may not make is a *ForbiddenError.
func (c *Client) CRDAdmissionWebhook(ctx context.Context) (string, error) {
	list, err := c.Client.Resource(validatingWebhookConfigurationGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", forbidden(err, validatingWebhookConfigurationGVR, "list")
	}
	var names []string
	for _, item := range list.Items {
		webhooks, _, _ := unstructured.NestedSlice(item.Object, "webhooks")
		for _, w := range webhooks {
			wh, _ := w.(map[string]any)
			if name, _ := wh["name"].(string); name == AdmissionWebhookName && judgesCRDUpdates(wh) {
				names = append(names, item.GetName())
				break
			}
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	slices.Sort(names)
	return names[0], nil
}

// judgesCRDUpdates reports whether a webhook's rules send it UPDATEs of
// customresourcedefinitions.apiextensions.k8s.io.
func judgesCRDUpdates(webhook map[string]any) bool {
	rules, _, _ := unstructured.NestedSlice(webhook, "rules")
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		has := func(field string, want ...string) bool {
			vals, _, _ := unstructured.NestedStringSlice(rule, field)
			for _, v := range vals {
				if slices.Contains(want, v) {
					return true
				}
			}
			return false
		}
		if has("operations", "UPDATE", "*") && has("apiGroups", "apiextensions.k8s.io", "*") &&
			has("resources", "customresourcedefinitions", "*", "*/*") {
			return true
		}
	}
	return false
}

package report

import (
	"fmt"
	"strconv"
)

// WebhookRBACCommand regenerates the webhook's role for the custom resources
// of the cluster's CRDs and applies it (docs/webhook.md, "Least
// privilege"): what an answer for a missing rule tells the operator to run.
const WebhookRBACCommand = "kapp tools crd-upgrade-safety-webhook rbac | kapp deploy -a crd-upgrade-safety-rbac -f - -y"

// MissingRule says that the webhook's identity may not make a read a review
// needs (the apiserver answered 403 Forbidden to verb on resource of
// group), in three parts, each short enough for an admission warning: what
// was refused, the RBAC rule that allows it, and the command that
// regenerates the role. A denial joins them with "; ".
func MissingRule(group, resource, verb string) []string {
	name := resource
	if group != "" {
		name += "." + group
	}
	return []string{
		fmt.Sprintf("the webhook may not %s %s (403 Forbidden from the apiserver)", verb, name),
		fmt.Sprintf("its ClusterRole lacks the rule {apiGroups: [%s], resources: [%s], verbs: [%s]}",
			strconv.Quote(group), strconv.Quote(resource), strconv.Quote(verb)),
		"regenerate the role for the cluster's CRDs and apply it: " + WebhookRBACCommand,
	}
}

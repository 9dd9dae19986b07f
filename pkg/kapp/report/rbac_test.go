package report

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestMissingRule(t *testing.T) {
	for _, tc := range []struct {
		group, resource, verb string
		want                  []string
	}{
		{"example.com", "gadgets", "list", []string{
			`the webhook may not list gadgets.example.com (403 Forbidden from the apiserver)`,
			`its ClusterRole lacks the rule {apiGroups: ["example.com"], resources: ["gadgets"], verbs: ["list"]}`,
			`regenerate the role for the cluster's CRDs and apply it: ` + WebhookRBACCommand}},
		{"", "configmaps", "get", []string{
			`the webhook may not get configmaps (403 Forbidden from the apiserver)`,
			`its ClusterRole lacks the rule {apiGroups: [""], resources: ["configmaps"], verbs: ["get"]}`,
			`regenerate the role for the cluster's CRDs and apply it: ` + WebhookRBACCommand}},
	} {
		got := MissingRule(tc.group, tc.resource, tc.verb)
		require.Equal(t, tc.want, got)
		for _, part := range got {
			// Each part fits an admission warning whole.
			require.Equal(t, part, AdmissionWarning(part)[len("CRDUpgradeSafety: "):])
			require.LessOrEqual(t, utf8.RuneCountInString(AdmissionWarning(part)), MaxWarningRunes)
		}
	}
}

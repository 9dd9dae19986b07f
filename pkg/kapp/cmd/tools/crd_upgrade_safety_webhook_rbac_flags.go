package tools

import "github.com/spf13/cobra"

// CRDUpgradeSafetyWebhookRBACFlags name the CRDs (files, or the cluster's)
// and the webhook's identity.
type CRDUpgradeSafetyWebhookRBACFlags struct {
	Files          []string
	Namespace      string
	ServiceAccount string
	Name           string
	// Dependents adds list on every resource: the ownerReferences check
	// reads the metadata of the objects of every kind.
	Dependents bool
}

func (s *CRDUpgradeSafetyWebhookRBACFlags) Set(cmd *cobra.Command) {
	cmd.Flags().StringSliceVarP(&s.Files, "file", "f", nil,
		"Set file whose CRDs the role covers, instead of the cluster's (format: /tmp/foo, https://..., -) (can repeat)")
	cmd.Flags().StringVar(&s.Namespace, "namespace", DefaultWebhookNamespace, "Set namespace of the webhook's service account")
	cmd.Flags().StringVar(&s.ServiceAccount, "service-account", DefaultWebhookServiceAccount, "Set name of the webhook's service account")
	cmd.Flags().StringVar(&s.Name, "name", DefaultWebhookRBACName, "Set name of the ClusterRole and ClusterRoleBinding")
	cmd.Flags().BoolVar(&s.Dependents, "dependents", false,
		"Also grant list on every resource, so that a review of a version removal can read the ownerReferences of dependents (Secrets included: RBAC cannot grant metadata only)")
}

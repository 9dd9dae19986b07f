package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"

	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/preflight"
	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The defaults of `kapp tools crd-upgrade-safety-webhook rbac`: the names of
// the install (examples/webhook).
const (
	DefaultWebhookNamespace      = "crd-upgrade-safety"
	DefaultWebhookServiceAccount = "crd-upgrade-safety-webhook"
	DefaultWebhookRBACName       = "crd-upgrade-safety-webhook-custom-resources"
)

// DependentsRule is the rule --dependents adds: list on every resource of
// every group, what kube.Client.DependentsOf reads (the metadata of the
// objects of every listable resource).
var DependentsRule = rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list"}}

type CRDUpgradeSafetyWebhookRBACOptions struct {
	ui          ui.UI
	depsFactory cmdcore.DepsFactory

	RBACFlags CRDUpgradeSafetyWebhookRBACFlags

	// listCRDs lists the cluster's CRDs; nil uses kapp's clients (tests
	// set it).
	listCRDs func(ctx context.Context) ([]apiextv1.CustomResourceDefinition, error)
}

func NewCRDUpgradeSafetyWebhookRBACOptions(ui ui.UI, depsFactory cmdcore.DepsFactory) *CRDUpgradeSafetyWebhookRBACOptions {
	return &CRDUpgradeSafetyWebhookRBACOptions{ui: ui, depsFactory: depsFactory}
}

func NewCRDUpgradeSafetyWebhookRBACCmd(o *CRDUpgradeSafetyWebhookRBACOptions, _ cmdcore.FlagsFactory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print the ClusterRole and binding that let the webhook list the custom resources of the cluster's CRDs",
		Long: `Print, as YAML, a ClusterRole that allows list on the custom resources of every
CRD of the cluster (or of the --file inputs), one rule per API group, sorted, and
a ClusterRoleBinding of it to the webhook's service account.

The install of examples/webhook grants the webhook only the reads of CRDs (and of
StorageVersionMigrations): no Secret, no ConfigMap, no built-in resource. A review
lists the custom resources of the CRD it judges (existingResources, crdDeletion,
managedFields), which this role allows. Apply it beside the install, and again
whenever CRDs are added: a review that needs a group the role lacks is answered
by failMode (closed: denied) with the missing rule and this command.

With --dependents the role also allows list on every resource of every group:
a review of an update that removes a version reads the metadata of every object
for ownerReferences naming it (ownerReferences check), which the plain role
does not allow; failMode decides such a review without it (closed: denied). The
webhook asks only for metadata, but RBAC cannot grant metadata only: its identity
may then read every object, Secrets included.

  kapp tools crd-upgrade-safety-webhook rbac | kapp deploy -a crd-upgrade-safety-rbac -f - -y

See docs/webhook.md, "Least privilege".`,
		RunE: func(_ *cobra.Command, _ []string) error { return o.Run() },
		Example: `
  # The role for the CRDs of the cluster, applied as its own kapp app
  kapp tools crd-upgrade-safety-webhook rbac | kapp deploy -a crd-upgrade-safety-rbac -f - -y

  # The role for the CRDs of a repository (GitOps), for an install in another namespace
  kapp tools crd-upgrade-safety-webhook rbac -f config/crds/ --namespace webhooks > webhook-rbac.yaml

  # Also let reviews of version removals read the ownerReferences of every object
  kapp tools crd-upgrade-safety-webhook rbac --dependents | kapp deploy -a crd-upgrade-safety-rbac -f - -y`,
	}
	o.RBACFlags.Set(cmd)
	return cmd
}

func (o *CRDUpgradeSafetyWebhookRBACOptions) Run() error {
	f := o.RBACFlags
	for _, v := range []struct{ flag, value string }{{"--namespace", f.Namespace}, {"--service-account", f.ServiceAccount}, {"--name", f.Name}} {
		if strings.TrimSpace(v.value) == "" {
			return fmt.Errorf("expected %s to name an object, got an empty name", v.flag)
		}
	}
	if stdinCount(f.Files) > 1 {
		return fmt.Errorf("expected standard input (-) at most once among --file")
	}
	var crds []apiextv1.CustomResourceDefinition
	source := "the cluster"
	if len(f.Files) > 0 {
		set, err := inputs.Load(f.Files, "input")
		if err != nil {
			return fmt.Errorf("reading CRDs: %w", err)
		}
		if len(set.CRDs) == 0 {
			return fmt.Errorf("%w: the --file inputs (%s) hold no apiextensions.k8s.io/v1 CustomResourceDefinition",
				inputs.ErrInvalidInput, strings.Join(f.Files, ", "))
		}
		for _, c := range set.CRDs {
			crds = append(crds, *c.CRD)
		}
		source = "the files " + strings.Join(f.Files, ", ")
	} else {
		list := o.listCRDs
		if list == nil {
			c, err := preflight.KubeClientFromDeps(o.depsFactory)
			if err != nil {
				return err
			}
			list = c.ListCRDs
		}
		var err error
		if crds, err = list(context.Background()); err != nil {
			return err
		}
	}
	out, err := WebhookRBAC(crds, source, f.Namespace, f.ServiceAccount, f.Name, f.Dependents)
	if err != nil {
		return err
	}
	o.ui.PrintBlock(out)
	return nil
}

// conversionServices are the service proxy names (https:<name>:<port>) of
// the conversion webhooks behind a Service that crds name, sorted.
func conversionServices(crds []apiextv1.CustomResourceDefinition) []string {
	var out []string
	for i := range crds {
		c := crds[i].Spec.Conversion
		if c == nil || c.Strategy != apiextv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.Service == nil {
			continue
		}
		svc := c.Webhook.ClientConfig.Service
		port := int32(443)
		if svc.Port != nil && *svc.Port != 0 {
			port = *svc.Port
		}
		name := fmt.Sprintf("https:%s:%d", svc.Name, port)
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// WebhookRBAC is the YAML of the ClusterRole that allows list on the custom
// resources of crds (a rule per group, groups and resources sorted) and of
// its ClusterRoleBinding to the service account namespace/serviceAccount,
// both called name; source says where the CRDs come from, in a comment.
// With dependents, the role also allows list on every resource of every
// group (DependentsRule).
func WebhookRBAC(crds []apiextv1.CustomResourceDefinition, source, namespace, serviceAccount, name string, dependents bool) ([]byte, error) {
	byGroup := map[string][]string{}
	for _, crd := range crds {
		g, r := crd.Spec.Group, crd.Spec.Names.Plural
		if r == "" {
			return nil, fmt.Errorf("crd %s: expected spec.names.plural", crd.Name)
		}
		if !slices.Contains(byGroup[g], r) {
			byGroup[g] = append(byGroup[g], r)
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	rules := make([]any, 0, len(groups))
	for _, g := range groups {
		slices.Sort(byGroup[g])
		rules = append(rules, map[string]any{"apiGroups": []string{g}, "resources": byGroup[g], "verbs": []string{"list"}})
	}
	if proxied := conversionServices(crds); len(proxied) > 0 {
		// The conversion probe reaches a webhook behind a Service through
		// the apiserver's service proxy: create on services/proxy, of
		// those Services only (their proxy names: https:<name>:<port>).
		rules = append(rules, map[string]any{"apiGroups": []string{""}, "resources": []string{"services/proxy"},
			"resourceNames": proxied, "verbs": []string{"create"}})
	}
	if dependents {
		rules = append(rules, map[string]any{"apiGroups": DependentsRule.APIGroups, "resources": DependentsRule.Resources, "verbs": DependentsRule.Verbs})
	}
	labels := map[string]any{"app.kubernetes.io/name": DefaultWebhookServiceAccount}
	role := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1",
		"kind":       "ClusterRole",
		"metadata":   map[string]any{"name": name, "labels": labels},
		"rules":      rules,
	}
	binding := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1",
		"kind":       "ClusterRoleBinding",
		"metadata":   map[string]any{"name": name, "labels": labels},
		"roleRef":    map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
		"subjects":   []any{map[string]any{"kind": "ServiceAccount", "name": serviceAccount, "namespace": namespace}},
	}
	var b strings.Builder
	b.WriteString("# The custom resources the CRDUpgradeSafety webhook may list (docs/webhook.md,\n")
	fmt.Fprintf(&b, "# \"Least privilege\"): %d %s in %d API %s, of %s.\n", len(crds), plural.Of(len(crds), "CRD", "CRDs"),
		len(groups), plural.Of(len(groups), "group", "groups"), source)
	b.WriteString("# Generated by `kapp tools crd-upgrade-safety-webhook rbac`: apply it beside the\n")
	b.WriteString("# install, and again when CRDs are added.\n")
	if dependents {
		b.WriteString("# --dependents: list on every resource too, for the ownerReferences of dependents\n")
		b.WriteString("# (the webhook asks for metadata only, but the role allows whole objects,\n")
		b.WriteString("# Secrets included).\n")
	}
	for i, obj := range []any{role, binding} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding the %s: %w", []string{"ClusterRole", "ClusterRoleBinding"}[i], err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	return []byte(b.String()), nil
}

package tools

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestWebhookExample keeps the install of examples/webhook what
// docs/webhook.md says it is: the Deployment's flags are the command's
// (and its settings decode), two replicas with probes, non-root and a
// read-only root file system, kept available by a PodDisruptionBudget; the
// RBAC reads only; the webhook configuration guards CRD updates and deletes
// with failurePolicy Fail. (test/e2e's TestWebhookInstallManifests has the
// apiserver validate every object.)
func TestWebhookExample(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "examples", "webhook")
	byKind := map[string][][]byte{}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		reader := utilyaml.NewYAMLReader(bufioReader(data))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			var meta struct{ Kind string }
			require.NoError(t, yaml.Unmarshal(doc, &meta))
			if meta.Kind != "" {
				byKind[meta.Kind] = append(byKind[meta.Kind], doc)
			}
		}
	}
	one := func(kind string, into runtime.Object) {
		t.Helper()
		require.Len(t, byKind[kind], 1, kind)
		require.NoError(t, yaml.UnmarshalStrict(byKind[kind][0], into), kind)
	}

	var dep appsv1.Deployment
	one("Deployment", &dep)
	require.EqualValues(t, 2, *dep.Spec.Replicas)
	pod := dep.Spec.Template.Spec
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Equal(t, "ghcr.io/crdsafety/kapp:VERSION", c.Image)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.EqualValues(t, "HTTPS", c.ReadinessProbe.HTTPGet.Scheme)

	// The arguments are the command's flags.
	require.Equal(t, []string{"kapp"}, c.Command)
	require.Equal(t, []string{"tools", "crd-upgrade-safety-webhook"}, c.Args[:2])
	o := NewCRDUpgradeSafetyWebhookOptions(ui.NewNoopUI(), nil)
	cmd := NewCRDUpgradeSafetyWebhookCmd(o, cmdcore.FlagsFactory{})
	require.NoError(t, cmd.ParseFlags(c.Args[2:]))
	require.Equal(t, 9443, o.ServingFlags.SecurePort)
	require.EqualValues(t, o.ServingFlags.SecurePort, c.Ports[0].ContainerPort)
	require.Equal(t, "/etc/crd-upgrade-safety/settings/settings.yaml", o.ConfigFile)

	// The settings the ConfigMap ships decode.
	var settings struct {
		Data map[string]string `json:"data"`
	}
	require.Len(t, byKind["ConfigMap"], 1)
	require.NoError(t, yaml.Unmarshal(byKind["ConfigMap"][0], &settings))
	raw, err := config.ParseFile([]byte(settings.Data["settings.yaml"]))
	require.NoError(t, err)
	cfg, err := config.Decode(raw)
	require.NoError(t, err)
	require.Equal(t, config.ModeError, cfg.Mode)

	var pdb policyv1.PodDisruptionBudget
	one("PodDisruptionBudget", &pdb)
	require.Equal(t, 1, pdb.Spec.MinAvailable.IntValue())
	require.Equal(t, dep.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels)

	// Read-only: no verb that writes. Least privilege: CRDs and
	// StorageVersionMigrations only, no wildcard, no other built-in
	// resource (the custom resources come from `... rbac`).
	var role rbacv1.ClusterRole
	one("ClusterRole", &role)
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			require.Contains(t, []string{"get", "list", "watch"}, v, "rule %v", r)
		}
		require.Len(t, r.APIGroups, 1, "rule %v", r)
		require.Len(t, r.Resources, 1, "rule %v", r)
		require.Contains(t, []string{"apiextensions.k8s.io/customresourcedefinitions", "storagemigration.k8s.io/storageversionmigrations"},
			r.APIGroups[0]+"/"+r.Resources[0], "rule %v", r)
	}

	// The NetworkPolicy admits the review port of the server's pods only,
	// from any source as shipped, from address ranges when set (the
	// apiserver is not a pod).
	var np networkingv1.NetworkPolicy
	one("NetworkPolicy", &np)
	require.Equal(t, dep.Spec.Selector.MatchLabels, np.Spec.PodSelector.MatchLabels)
	require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
	require.Len(t, np.Spec.Ingress, 1)
	require.Len(t, np.Spec.Ingress[0].Ports, 1)
	require.Equal(t, c.Ports[0].Name, np.Spec.Ingress[0].Ports[0].Port.String())
	for _, p := range np.Spec.Ingress[0].From {
		require.NotNil(t, p.IPBlock, "peer %v", p)
		require.Nil(t, p.PodSelector)
		require.Nil(t, p.NamespaceSelector)
	}

	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	one("ValidatingWebhookConfiguration", &vwc)
	require.Len(t, vwc.Webhooks, 1)
	w := vwc.Webhooks[0]
	require.Equal(t, admissionregistrationv1.Fail, *w.FailurePolicy)
	require.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects)
	require.Equal(t, []string{"v1"}, w.AdmissionReviewVersions)
	require.EqualValues(t, 15, *w.TimeoutSeconds)
	require.Equal(t, "/validate", *w.ClientConfig.Service.Path)
	require.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Delete}, w.Rules[0].Operations)
	require.Equal(t, []string{"customresourcedefinitions"}, w.Rules[0].Resources)
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

package tools

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const webhookRBACTestdata = "testdata/webhook-rbac"

// TestWebhookRBACCommand prints the role for the CRDs of files or of the
// cluster, as the golden files under testdata/webhook-rbac say (-update
// rewrites them), and refuses bad flags with errors naming them.
func TestWebhookRBACCommand(t *testing.T) {
	td := func(name string) string { return filepath.Join(webhookRBACTestdata, name) }
	for _, tc := range []struct {
		name    string
		args    []string
		cluster []string // files of the cluster's CRDs (no -f)
		listErr error
		golden  string
		wantErr string
	}{
		{name: "files", args: []string{"-f", td("crds-a.yaml"), "-f", td("crds-b.yaml")}, golden: "files.yaml"},
		{name: "cluster", cluster: []string{td("crds-b.yaml"), td("crds-a.yaml")}, golden: "cluster.yaml"},
		{name: "another install", cluster: []string{td("crds-b.yaml")},
			args:   []string{"--namespace", "webhooks", "--service-account", "guard", "--name", "guard-crs"},
			golden: "another-install.yaml"},
		{name: "no CRDs on the cluster", golden: "none.yaml"},
		{name: "dependents", args: []string{"-f", td("crds-a.yaml"), "--dependents"}, golden: "dependents.yaml"},
		{name: "files without CRDs", args: []string{"-f", td("no-crds.yaml")},
			wantErr: "invalid input: the --file inputs (" + td("no-crds.yaml") + ") hold no apiextensions.k8s.io/v1 CustomResourceDefinition"},
		{name: "empty namespace", args: []string{"--namespace", ""}, wantErr: "expected --namespace to name an object, got an empty name"},
		{name: "stdin twice", args: []string{"-f", "-", "-f", "-"}, wantErr: "expected standard input (-) at most once among --file"},
		{name: "the cluster refuses", listErr: errors.New("listing CRDs: connection refused"), wantErr: "listing CRDs: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			confUI := ui.NewWrappingConfUI(ui.NewWriterUI(&out, &out, ui.NewNoopLogger()), ui.NewNoopLogger())
			o := NewCRDUpgradeSafetyWebhookRBACOptions(confUI, nil)
			listed := false
			o.listCRDs = func(context.Context) ([]apiextv1.CustomResourceDefinition, error) {
				listed = true
				if tc.listErr != nil {
					return nil, tc.listErr
				}
				var crds []apiextv1.CustomResourceDefinition
				if len(tc.cluster) > 0 {
					set, err := inputs.Load(tc.cluster, "cluster")
					require.NoError(t, err)
					for _, c := range set.CRDs {
						crds = append(crds, *c.CRD)
					}
				}
				return crds, nil
			}
			cmd := NewCRDUpgradeSafetyWebhookRBACCmd(o, cmdcore.FlagsFactory{})
			cmd.SetArgs(append([]string{}, tc.args...)) // never nil: cobra would read os.Args
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, len(tc.cluster) > 0 || tc.name == "no CRDs on the cluster", listed, "the cluster is read only without -f")
			golden := td(tc.golden)
			if *update {
				require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), out.String())
		})
	}
}

// TestWebhookRBACOutput: what the command prints is a ClusterRole that only
// lists (one rule per group, sorted) and a binding of it to the service
// account, each decoding strictly into its API type.
func TestWebhookRBACOutput(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(webhookRBACTestdata, "another-install.yaml"))
	require.NoError(t, err)
	reader := utilyaml.NewYAMLReader(bufioReader(data))
	roleDoc, err := reader.Read()
	require.NoError(t, err)
	bindingDoc, err := reader.Read()
	require.NoError(t, err)

	var role rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict(roleDoc, &role))
	require.Equal(t, "guard-crs", role.Name)
	require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{"alpha.example.com"}, Resources: []string{"sprockets"}, Verbs: []string{"list"}}}, role.Rules)

	var binding rbacv1.ClusterRoleBinding
	require.NoError(t, yaml.UnmarshalStrict(bindingDoc, &binding))
	require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "guard-crs"}, binding.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "guard", Namespace: "webhooks"}}, binding.Subjects)
}

// TestWebhookRBACConversionServices: a CRD whose conversion webhook is
// behind a Service gets create on that Service's proxy (the conversion
// probe's way to it), and on no other.
func TestWebhookRBACConversionServices(t *testing.T) {
	crd := func(name string, svc *apiextv1.ServiceReference) apiextv1.CustomResourceDefinition {
		c := apiextv1.CustomResourceDefinition{}
		c.Name, c.Spec.Group, c.Spec.Names.Plural = name+".example.com", "example.com", name
		if svc != nil {
			c.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter,
				Webhook: &apiextv1.WebhookConversion{ClientConfig: &apiextv1.WebhookClientConfig{Service: svc}}}
		}
		return c
	}
	port := int32(9443)
	out, err := WebhookRBAC([]apiextv1.CustomResourceDefinition{
		crd("widgets", &apiextv1.ServiceReference{Namespace: "ops", Name: "widget-converter"}),
		crd("gadgets", &apiextv1.ServiceReference{Namespace: "ops", Name: "gadget-converter", Port: &port}),
		crd("plain", nil),
	}, "test", "ns", "sa", "role", false)
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.Unmarshal(bytes.SplitN(out, []byte("\n---"), 2)[0], &role))
	require.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"example.com"}, Resources: []string{"gadgets", "plain", "widgets"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"services/proxy"}, ResourceNames: []string{"https:gadget-converter:9443", "https:widget-converter:443"}, Verbs: []string{"create"}},
	}, role.Rules)
}

// TestWebhookRBACDefaults: the command's defaults are the install's names
// (examples/webhook), and the command a denial names is this one.
func TestWebhookRBACDefaults(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "examples", "webhook")
	data, err := os.ReadFile(filepath.Join(dir, "rbac.yaml"))
	require.NoError(t, err)
	var sa struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
	}
	require.NoError(t, yaml.Unmarshal(bytes.SplitN(data, []byte("\n---"), 2)[0], &sa))
	require.Equal(t, "ServiceAccount", sa.Kind)
	require.Equal(t, DefaultWebhookServiceAccount, sa.Metadata.Name)
	require.Equal(t, DefaultWebhookNamespace, sa.Metadata.Namespace)
	require.Contains(t, report.WebhookRBACCommand, "kapp tools crd-upgrade-safety-webhook rbac")
}

// TestWebhookRBACDocs: docs/webhook.md shows the command's output and the
// denial for a missing rule as they are.
func TestWebhookRBACDocs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "webhook.md"))
	require.NoError(t, err)
	doc := string(data)

	const cmdLine = "$ kapp tools crd-upgrade-safety-webhook rbac -f widgets-crd.yaml\n"
	start := strings.Index(doc, cmdLine)
	require.GreaterOrEqual(t, start, 0, "docs/webhook.md shows %q", cmdLine)
	shown, _, ok := strings.Cut(doc[start+len(cmdLine):], "...\n")
	require.True(t, ok)
	crd := apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{Group: "example.com",
		Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets"}}}
	out, err := WebhookRBAC([]apiextv1.CustomResourceDefinition{crd}, "the files widgets-crd.yaml",
		DefaultWebhookNamespace, DefaultWebhookServiceAccount, DefaultWebhookRBACName, false)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(out), shown), "docs/webhook.md shows:\n%s\nthe command prints:\n%s", shown, out)

	oneLine := strings.Join(strings.Fields(doc), " ")
	require.Contains(t, oneLine, "gadgets.example.org, denied under failMode closed: "+strings.Join(report.MissingRule("example.org", "gadgets", "list"), "; "))
	require.Contains(t, doc, report.WebhookRBACCommand)
}

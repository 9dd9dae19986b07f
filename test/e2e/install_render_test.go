package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The installs users use (issue 32 item 4): the Carvel package's templates
// (carvel-package/config, ytt) and the Helm chart
// (charts/crd-upgrade-safety-webhook) render the install of examples/webhook.
// These tests need no cluster: they render with the real ytt
// (hack/kapp-controller.sh builds it) and Helm 4 ($HELM), and check the
// rendered objects: the same as examples/webhook's, so the three cannot
// drift, and the guarantees of the install.

const (
	packageDir = "../../carvel-package"
	chartDir   = "../../charts/crd-upgrade-safety-webhook"
	// imagePlaceholder is examples/webhook's image, which a release sets.
	imagePlaceholder = "ghcr.io/crdsafety/kapp:VERSION"
)

// renderTool is the path of ytt or helm: the environment's, else the one
// the hack scripts build into .cache; the test skips without it (fails
// under CI=true).
func renderTool(t *testing.T, env, cached string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := filepath.Abs(filepath.Join("..", "..", ".cache", cached)); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s is not set and .cache/%s is not built (hack/kapp-controller.sh build, hack/ssaclients.sh build)", env, cached)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func yttBin(t *testing.T) string  { return renderTool(t, kcYttVar, "kappctrl/bin/ytt") }
func helmBin(t *testing.T) string { return renderTool(t, "HELM", "ssaclients/bin/helm") }

// renderPackage renders the package's templates with ytt and the values
// (-v/--data-value-yaml arguments).
func renderPackage(t *testing.T, args ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	out, err := exec.Command(yttBin(t), append([]string{"-f", filepath.Join(packageDir, "config")}, args...)...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ytt: %w\n%s", err, out)
	}
	return yamlDocs(t, out), nil
}

// renderChart renders the chart with `helm template` into namespace ns.
func renderChart(t *testing.T, ns string, args ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), append([]string{"template", "crd-upgrade-safety", chartDir, "--namespace", ns}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("helm template: %w\n%s", err, out)
	}
	return yamlDocs(t, out), nil
}

func objKey(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// hookOf is an object's helm.sh/hook annotation.
func hookOf(o *unstructured.Unstructured) string { return o.GetAnnotations()["helm.sh/hook"] }

// comparable is obj with what the templating adds or changes by design
// removed: the annotations of kapp and Helm (ordering, versioning, hooks),
// the pod template's settings checksum (Helm's way of rolling the pods on
// a change, kapp's is the versioned ConfigMap), the comments of the
// settings file (compared as YAML).
func comparable(t *testing.T, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	o := obj.DeepCopy()
	strip := func(path ...string) {
		ann, _, _ := unstructured.NestedStringMap(o.Object, path...)
		for k := range ann {
			if strings.HasPrefix(k, "kapp.k14s.io/") || strings.HasPrefix(k, "helm.sh/") || strings.HasPrefix(k, "checksum/") {
				delete(ann, k)
			}
		}
		if len(ann) == 0 {
			unstructured.RemoveNestedField(o.Object, path...)
		} else {
			require.NoError(t, unstructured.SetNestedStringMap(o.Object, ann, path...))
		}
	}
	strip("metadata", "annotations")
	strip("spec", "template", "metadata", "annotations")
	if o.GetKind() == "ConfigMap" {
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for k, v := range data {
			var parsed any
			require.NoError(t, yaml.Unmarshal([]byte(v), &parsed), "ConfigMap %s key %s", o.GetName(), k)
			require.NoError(t, unstructured.SetNestedField(o.Object, fmt.Sprint(parsed), "data", k))
		}
	}
	return o.Object
}

// requireSameObjects asserts that got and want hold the same objects
// (modulo comparable), naming the first that differ.
func requireSameObjects(t *testing.T, what string, got, want []*unstructured.Unstructured) {
	t.Helper()
	index := func(objs []*unstructured.Unstructured) (map[string]*unstructured.Unstructured, []string) {
		m := map[string]*unstructured.Unstructured{}
		var keys []string
		for _, o := range objs {
			k := objKey(o)
			require.NotContainsf(t, m, k, "%s: %s twice", what, k)
			m[k] = o
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return m, keys
	}
	g, gk := index(got)
	w, wk := index(want)
	require.Equalf(t, wk, gk, "%s: not the objects of examples/webhook", what)
	for _, k := range wk {
		gy, err := yaml.Marshal(comparable(t, g[k]))
		require.NoError(t, err)
		wy, err := yaml.Marshal(comparable(t, w[k]))
		require.NoError(t, err)
		require.Equalf(t, string(wy), string(gy), "%s: %s differs from examples/webhook's", what, k)
	}
}

// exampleObjects is examples/webhook and examples/webhook-cert-manager.
func exampleObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(examplesDir, "webhook", "*.yaml"))
	require.NoError(t, err)
	files = append(files, filepath.Join(examplesDir, "webhook-cert-manager", "certificate.yaml"))
	var objs []*unstructured.Unstructured
	for _, f := range files {
		objs = append(objs, readManifests(t, f)...)
	}
	require.GreaterOrEqual(t, len(objs), 13)
	return objs
}

// TestInstallRenderAgreesWithExamples: with their defaults (certificates
// from cert-manager) the package's templates render the objects of
// examples/webhook and examples/webhook-cert-manager, and so does the chart
// in namespace crd-upgrade-safety, but for the Namespace (Helm's: helm
// install --create-namespace) and the pre-delete hook that removes the
// registration first.
func TestInstallRenderAgreesWithExamples(t *testing.T) {
	t.Parallel()
	examples := exampleObjects(t)

	pkg, err := renderPackage(t)
	require.NoError(t, err)
	requireSameObjects(t, "the Carvel package", pkg, examples)

	chart, err := renderChart(t, webhookNamespace, "--set", "image="+imagePlaceholder)
	require.NoError(t, err)
	var installed []*unstructured.Unstructured
	for _, o := range chart {
		if hookOf(o) != "pre-delete" {
			installed = append(installed, o)
		}
	}
	var noNamespace []*unstructured.Unstructured
	for _, o := range examples {
		if o.GetKind() != "Namespace" {
			noNamespace = append(noNamespace, o)
		}
	}
	requireSameObjects(t, "the Helm chart", installed, noNamespace)
}

// byKind returns the one object of a kind (and name, when given).
func byKind(t *testing.T, objs []*unstructured.Unstructured, kind string, hook string) *unstructured.Unstructured {
	t.Helper()
	var found *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && hookOf(o) == hook {
			require.Nilf(t, found, "two %s", kind)
			found = o
		}
	}
	require.NotNilf(t, found, "no %s (hook %q)", kind, hook)
	return found
}

// number is the integer at path of obj (decoded from YAML as JSON: a
// float64, or an int64).
func number(t *testing.T, obj map[string]any, path ...string) int64 {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	require.NoError(t, err)
	require.Truef(t, found, "no %s", strings.Join(path, "."))
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	t.Fatalf("%s: %v is not a number", strings.Join(path, "."), v)
	return 0
}

// requireGuarantees asserts the guarantees of examples/webhook on rendered
// objects: the server's replicas, a PodDisruptionBudget keeping one up,
// non-root, a read-only root file system, no privilege escalation, every
// capability dropped.
func requireGuarantees(t *testing.T, what string, objs []*unstructured.Unstructured, replicas int64) {
	t.Helper()
	dep := byKind(t, objs, "Deployment", "")
	require.Equalf(t, replicas, number(t, dep.Object, "spec", "replicas"), "%s: replicas", what)
	labels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	pdb := byKind(t, objs, "PodDisruptionBudget", "")
	require.Equalf(t, int64(1), number(t, pdb.Object, "spec", "minAvailable"), "%s: the PodDisruptionBudget keeps one replica up", what)
	sel, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
	require.NotEmpty(t, sel)
	for k, v := range sel {
		require.Equalf(t, v, labels[k], "%s: the PodDisruptionBudget selects the server's pods", what)
	}
	require.Equal(t, dep.GetNamespace(), pdb.GetNamespace())
	nonRoot, _, _ := unstructured.NestedBool(dep.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot")
	require.Truef(t, nonRoot, "%s: runAsNonRoot", what)
	require.NotZerof(t, number(t, dep.Object, "spec", "template", "spec", "securityContext", "runAsUser"), "%s: runAsUser", what)
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	c := containers[0].(map[string]any)
	ro, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem")
	require.Truef(t, ro, "%s: readOnlyRootFilesystem", what)
	esc, found, _ := unstructured.NestedBool(c, "securityContext", "allowPrivilegeEscalation")
	require.Truef(t, found && !esc, "%s: allowPrivilegeEscalation false", what)
	drop, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "drop")
	require.Equalf(t, []string{"ALL"}, drop, "%s: capabilities dropped", what)
	_, found, _ = unstructured.NestedFieldNoCopy(c, "readinessProbe", "httpGet")
	require.Truef(t, found, "%s: a readiness probe (what 'ready' means before the registration)", what)

	// A NetworkPolicy of the server's pods admits the review port only.
	np := byKind(t, objs, "NetworkPolicy", "")
	require.Equal(t, dep.GetNamespace(), np.GetNamespace())
	npSel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
	require.NotEmptyf(t, npSel, "%s: the NetworkPolicy selects pods", what)
	for k, v := range npSel {
		require.Equalf(t, v, labels[k], "%s: the NetworkPolicy selects the server's pods", what)
	}
	types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes")
	require.Containsf(t, types, "Ingress", "%s: the NetworkPolicy restricts ingress", what)
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	require.NotEmptyf(t, ingress, "%s: the NetworkPolicy admits the apiserver", what)
	first := ingress[0].(map[string]any)
	require.Equalf(t, []any{map[string]any{"protocol": "TCP", "port": "https"}}, first["ports"], "%s: the review port only", what)
	from, _ := first["from"].([]any) // none: any source, the default
	for _, p := range from {
		require.Containsf(t, p, "ipBlock", "%s: the apiserver is named by its addresses", what)
	}
}

// TestInstallRenderGuarantees: both installs keep examples/webhook's
// guarantees, with their defaults and with other values, and register the
// webhook only after the server is ready and remove the registration
// first: kapp's change group and rules in the package; in the chart a
// post-install/post-upgrade hook (created after the release's objects are
// ready when Helm waits) and a pre-delete hook of the same name (deleting
// it before anything else of the release).
func TestInstallRenderGuarantees(t *testing.T) {
	t.Parallel()
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	variants := []struct {
		name     string
		yttArgs  []string
		helmArgs []string
		replicas int64
	}{
		{name: "defaults", replicas: 2},
		{name: "provided certificate, url, three replicas", replicas: 3,
			yttArgs: []string{"-v", "tls.source=provided", "-v", "tls.caBundle=" + pem, "-v", "tls.cert=" + pem, "-v", "tls.key=K",
				"-v", "webhook.url=https://127.0.0.1:9443/validate", "--data-value-yaml", "replicas=3"},
			helmArgs: []string{"--set", "tls.source=provided", "--set-string", "tls.caBundle=" + pem, "--set-string", "tls.cert=" + pem, "--set", "tls.key=K",
				"--set", "webhook.url=https://127.0.0.1:9443/validate", "--set", "replicas=3"}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			pkg, err := renderPackage(t, v.yttArgs...)
			require.NoError(t, err)
			requireGuarantees(t, "the Carvel package", pkg, v.replicas)
			dep := byKind(t, pkg, "Deployment", "")
			group := dep.GetAnnotations()["kapp.k14s.io/change-group"]
			require.NotEmpty(t, group, "the server's kapp change group")
			vwc := byKind(t, pkg, "ValidatingWebhookConfiguration", "")
			require.Equal(t, "upsert after upserting "+group, vwc.GetAnnotations()["kapp.k14s.io/change-rule.create"],
				"the registration is applied after the server is ready")
			require.Equal(t, "delete before deleting "+group, vwc.GetAnnotations()["kapp.k14s.io/change-rule.delete"],
				"the registration is deleted before the server")

			chart, err := renderChart(t, "webhook-ns", v.helmArgs...)
			require.NoError(t, err)
			var release []*unstructured.Unstructured
			for _, o := range chart {
				if hookOf(o) == "" {
					release = append(release, o)
				}
			}
			requireGuarantees(t, "the Helm chart", release, v.replicas)
			for _, o := range release {
				require.NotEqualf(t, "ValidatingWebhookConfiguration", o.GetKind(), "the registration must be a hook, not created with the server")
			}
			reg := byKind(t, chart, "ValidatingWebhookConfiguration", "post-install,post-upgrade")
			require.Equal(t, "before-hook-creation", reg.GetAnnotations()["helm.sh/hook-delete-policy"])
			hooks, _, _ := unstructured.NestedSlice(reg.Object, "webhooks")
			require.Len(t, hooks, 1)
			unreg := byKind(t, chart, "ValidatingWebhookConfiguration", "pre-delete")
			require.Equal(t, reg.GetName(), unreg.GetName(), "the pre-delete hook replaces the registration")
			require.Equal(t, "before-hook-creation,hook-succeeded", unreg.GetAnnotations()["helm.sh/hook-delete-policy"],
				"the pre-delete hook deletes the registration, then itself")
			hooks, _, _ = unstructured.NestedSlice(unreg.Object, "webhooks")
			require.Empty(t, hooks, "the pre-delete hook registers nothing")

			// Both register the same webhook.
			pw, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
			cw, _, _ := unstructured.NestedSlice(reg.Object, "webhooks")
			pc := pw[0].(map[string]any)
			cc := cw[0].(map[string]any)
			// The Service's namespace is the package's value, the chart's
			// the release's.
			unstructured.RemoveNestedField(pc, "clientConfig", "service", "namespace")
			unstructured.RemoveNestedField(cc, "clientConfig", "service", "namespace")
			require.Equal(t, pc, cc, "the package and the chart register different webhooks")
		})
	}
}

// TestInstallRenderValues: the values take effect in both installs (the
// certificate sources, the settings, the URL, the object selector, the
// extra rules), and bad values are errors naming the value.
func TestInstallRenderValues(t *testing.T) {
	t.Parallel()
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	type check func(t *testing.T, objs []*unstructured.Unstructured)
	webhookOf := func(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
		for _, o := range objs {
			if o.GetKind() == "ValidatingWebhookConfiguration" && hookOf(o) != "pre-delete" {
				hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
				require.Len(t, hooks, 1)
				return hooks[0].(map[string]any)
			}
		}
		t.Fatal("no registration")
		return nil
	}
	kinds := func(objs []*unstructured.Unstructured) map[string]int {
		m := map[string]int{}
		for _, o := range objs {
			m[o.GetKind()]++
		}
		return m
	}
	cases := []struct {
		name         string
		values       map[string]string // key -> value, a string
		yttYAML      []string          // more values for ytt: --data-value-yaml
		helmSet      []string          // the same for helm: --set
		check        check
		errSubstring string
	}{
		{name: "existing secret", values: map[string]string{"tls.source": "secret", "tls.secretName": "mine", "tls.caBundle": pem},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				require.Zero(t, kinds(objs)["Certificate"])
				require.Zero(t, kinds(objs)["Secret"])
				ca, _, _ := unstructured.NestedString(webhookOf(t, objs), "clientConfig", "caBundle")
				require.NotEmpty(t, ca)
				dep := byKind(t, objs, "Deployment", "")
				vols, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
				require.Equal(t, "mine", vols[0].(map[string]any)["secret"].(map[string]any)["secretName"])
			}},
		{name: "secret without caBundle", values: map[string]string{"tls.source": "secret"}, errSubstring: "tls.caBundle"},
		{name: "provided without key", values: map[string]string{"tls.source": "provided", "tls.caBundle": pem, "tls.cert": pem}, errSubstring: "tls.key"},
		{name: "provided", values: map[string]string{"tls.source": "provided", "tls.caBundle": pem, "tls.cert": pem, "tls.key": "KEY"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				s := byKind(t, objs, "Secret", "")
				require.Equal(t, "crd-upgrade-safety-webhook-tls", s.GetName())
				require.Equal(t, "kubernetes.io/tls", s.Object["type"])
			}},
		{name: "settings", values: map[string]string{"settings.mode": "warn", "settings.failMode": "open", "settings.extra": "liveChecksTimeout: 5s"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				cm := byKind(t, objs, "ConfigMap", "")
				var s map[string]any
				require.NoError(t, yaml.Unmarshal([]byte(cm.Object["data"].(map[string]any)["settings.yaml"].(string)), &s))
				require.Equal(t, map[string]any{"mode": "warn", "failMode": "open", "liveChecksTimeout": "5s"}, s)
			}},
		{name: "mode in settings.extra", values: map[string]string{"settings.extra": "mode: warn"}, errSubstring: "settings.mode"},
		{name: "unknown mode", values: map[string]string{"settings.mode": "loud"}, errSubstring: "mode"},
		{name: "url and selector", values: map[string]string{"webhook.url": "https://127.0.0.1:1/validate", "tls.source": "secret", "tls.caBundle": pem,
			"webhook.failurePolicy": "Ignore"},
			yttYAML: []string{"webhook.objectSelector={matchLabels: {team: a}}"}, helmSet: []string{"webhook.objectSelector.matchLabels.team=a"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				w := webhookOf(t, objs)
				require.Equal(t, "https://127.0.0.1:1/validate", w["clientConfig"].(map[string]any)["url"])
				require.NotContains(t, w["clientConfig"], "service")
				require.Equal(t, map[string]any{"matchLabels": map[string]any{"team": "a"}}, w["objectSelector"])
				require.Equal(t, "Ignore", w["failurePolicy"])
			}},
		{name: "http url", values: map[string]string{"webhook.url": "http://127.0.0.1:1/validate"}, errSubstring: "url"},
		{name: "extra rules",
			yttYAML: []string{"rbac.extraRules=[{apiGroups: [example.com], resources: [widgets], verbs: [get]}]"},
			helmSet: []string{"rbac.extraRules[0].apiGroups[0]=example.com", "rbac.extraRules[0].resources[0]=widgets", "rbac.extraRules[0].verbs[0]=get"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				rules, _, _ := unstructured.NestedSlice(byKind(t, objs, "ClusterRole", "").Object, "rules")
				require.Len(t, rules, 3)
				require.Equal(t, []any{"example.com"}, rules[2].(map[string]any)["apiGroups"])
			}},
		{name: "custom resource rules: a second role, bound to the service account",
			yttYAML: []string{"rbac.customResourceRules=[{apiGroups: [example.com], resources: [gadgets, widgets], verbs: [list]}]"},
			helmSet: []string{"rbac.customResourceRules[0].apiGroups[0]=example.com", "rbac.customResourceRules[0].resources[0]=gadgets",
				"rbac.customResourceRules[0].resources[1]=widgets", "rbac.customResourceRules[0].verbs[0]=list"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				requireRole(t, objs, "crd-upgrade-safety-webhook-custom-resources",
					[]any{map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"gadgets", "widgets"}, "verbs": []any{"list"}}})
			}},
		{name: "broad, by choice", values: map[string]string{}, yttYAML: []string{"rbac.broad=true"}, helmSet: []string{"rbac.broad=true"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				requireRole(t, objs, "crd-upgrade-safety-webhook-broad",
					[]any{map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"list"}}})
			}},
		{name: "conversion webhook Services: a Role per namespace, create on services/proxy of those only",
			yttYAML: []string{"rbac.conversionWebhookServices=[{namespace: operators, name: widget-converter}, {namespace: operators, name: gadget-converter, port: 8443}, " +
				"{namespace: billing, name: invoice-converter}, {namespace: operators, name: widget-converter}]"},
			helmSet: []string{"rbac.conversionWebhookServices[0].namespace=operators", "rbac.conversionWebhookServices[0].name=widget-converter",
				"rbac.conversionWebhookServices[1].namespace=operators", "rbac.conversionWebhookServices[1].name=gadget-converter", "rbac.conversionWebhookServices[1].port=8443",
				"rbac.conversionWebhookServices[2].namespace=billing", "rbac.conversionWebhookServices[2].name=invoice-converter",
				"rbac.conversionWebhookServices[3].namespace=operators", "rbac.conversionWebhookServices[3].name=widget-converter"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				roles := map[string][]any{}
				for _, o := range objs {
					switch o.GetKind() {
					case "Role":
						require.Equal(t, "crd-upgrade-safety-webhook-conversion-proxy", o.GetName())
						rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
						roles[o.GetNamespace()] = rules
					case "RoleBinding":
						ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
						require.Equal(t, "crd-upgrade-safety-webhook-conversion-proxy", ref)
						subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
						require.Len(t, subjects, 1)
						require.Equal(t, "crd-upgrade-safety-webhook", subjects[0].(map[string]any)["name"])
					case "ClusterRole":
						require.NotContains(t, fmt.Sprint(o.Object["rules"]), "services/proxy", "never a cluster-wide proxy grant")
					}
				}
				rule := func(names ...any) []any {
					return []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"services/proxy"}, "resourceNames": names, "verbs": []any{"create"}}}
				}
				require.Equal(t, map[string][]any{
					"operators": rule("https:gadget-converter:8443", "https:widget-converter:443"),
					"billing":   rule("https:invoice-converter:443"),
				}, roles)
				require.Equal(t, 2, kinds(objs)["RoleBinding"])
			}},
		{name: "conversion webhook Service without a name", yttYAML: []string{"rbac.conversionWebhookServices=[{namespace: operators}]"},
			helmSet: []string{"rbac.conversionWebhookServices[0].namespace=operators"}, errSubstring: "name"},
		{name: "network policy: the apiserver's ranges, the pod CIDR excepted, an extra rule",
			yttYAML: []string{`networkPolicy.apiserverCIDRs=[10.0.0.0/8, "fd00::/8"]`, `networkPolicy.exceptCIDRs=[10.244.0.0/16, "fd00:10:244::/56"]`,
				"networkPolicy.extraIngress=[{ports: [{port: 8080}]}]"},
			helmSet: []string{"networkPolicy.apiserverCIDRs={10.0.0.0/8,fd00::/8}", "networkPolicy.exceptCIDRs={10.244.0.0/16,fd00:10:244::/56}",
				"networkPolicy.extraIngress[0].ports[0].port=8080"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				ingress, _, _ := unstructured.NestedSlice(byKind(t, objs, "NetworkPolicy", "").Object, "spec", "ingress")
				require.Len(t, ingress, 2)
				require.Equal(t, []any{
					map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/8", "except": []any{"10.244.0.0/16"}}},
					map[string]any{"ipBlock": map[string]any{"cidr": "fd00::/8", "except": []any{"fd00:10:244::/56"}}},
				}, ingress[0].(map[string]any)["from"])
				ports, _ := ingress[1].(map[string]any)["ports"].([]any)
				require.Len(t, ports, 1)
				require.Equal(t, "8080", fmt.Sprint(ports[0].(map[string]any)["port"]), "the extra rule as given")
			}},
		{name: "network policy off", yttYAML: []string{"networkPolicy.enabled=false"}, helmSet: []string{"networkPolicy.enabled=false"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				require.Zero(t, kinds(objs)["NetworkPolicy"])
			}},
		{name: "network policy without ranges: the review port from any source", yttYAML: []string{"networkPolicy.exceptCIDRs=[10.244.0.0/16]"},
			helmSet: []string{"networkPolicy.exceptCIDRs={10.244.0.0/16}"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				ingress, _, _ := unstructured.NestedSlice(byKind(t, objs, "NetworkPolicy", "").Object, "spec", "ingress")
				require.Len(t, ingress, 1)
				require.NotContains(t, ingress[0], "from")
			}},
		{name: "client certificates: the CA, the names, the probes on a plain port",
			values:  map[string]string{"clientAuth.caBundle": pem},
			yttYAML: []string{"clientAuth.allowedNames=[kube-apiserver-webhook-client, other]"},
			helmSet: []string{"clientAuth.allowedNames={kube-apiserver-webhook-client,other}"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				var ca *unstructured.Unstructured
				for _, o := range objs {
					if o.GetKind() == "ConfigMap" && o.GetName() == "crd-upgrade-safety-webhook-client-ca" {
						ca = o
					}
				}
				require.NotNil(t, ca, "the client CA's ConfigMap")
				require.Equal(t, pem, ca.Object["data"].(map[string]any)["ca.crt"])
				dep := byKind(t, objs, "Deployment", "")
				containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
				c := containers[0].(map[string]any)
				args, _, _ := unstructured.NestedStringSlice(c, "args")
				require.Subset(t, args, []string{"--client-ca-file=/etc/crd-upgrade-safety/client-ca/ca.crt",
					"--client-allowed-names=kube-apiserver-webhook-client,other", "--health-probe-bind-address=:8081"})
				for _, probe := range []string{"readinessProbe", "livenessProbe"} {
					get, _, _ := unstructured.NestedMap(c, probe, "httpGet")
					require.Equal(t, "health", get["port"], probe)
					require.Equal(t, "HTTP", get["scheme"], probe)
				}
				ports, _, _ := unstructured.NestedSlice(c, "ports")
				require.Len(t, ports, 2)
				require.Equal(t, "health", ports[1].(map[string]any)["name"])
				mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
				require.Equal(t, "/etc/crd-upgrade-safety/client-ca", mounts[len(mounts)-1].(map[string]any)["mountPath"])
				vols, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
				require.Equal(t, "crd-upgrade-safety-webhook-client-ca", vols[len(vols)-1].(map[string]any)["configMap"].(map[string]any)["name"])
			}},
		{name: "name prefix", values: map[string]string{"namePrefix": "e2e"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, o := range objs {
					if o.GetKind() == "Namespace" {
						continue // the value namespace
					}
					require.Truef(t, strings.HasPrefix(o.GetName(), "e2e"), "%s", objKey(o))
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var yttArgs, helmArgs []string
			keys := make([]string, 0, len(c.values))
			for k := range c.values {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				helmArgs = append(helmArgs, "--set-string", k+"="+c.values[k])
				yttArgs = append(yttArgs, "-v", k+"="+c.values[k])
			}
			for _, v := range c.yttYAML {
				yttArgs = append(yttArgs, "--data-value-yaml", v)
			}
			for _, v := range c.helmSet {
				helmArgs = append(helmArgs, "--set", v)
			}
			for _, r := range []struct {
				what   string
				render func() ([]*unstructured.Unstructured, error)
			}{
				{"the Carvel package", func() ([]*unstructured.Unstructured, error) { return renderPackage(t, yttArgs...) }},
				{"the Helm chart", func() ([]*unstructured.Unstructured, error) { return renderChart(t, webhookNamespace, helmArgs...) }},
			} {
				objs, err := r.render()
				if c.errSubstring != "" {
					require.Errorf(t, err, "%s: no error", r.what)
					require.Containsf(t, err.Error(), c.errSubstring, "%s", r.what)
					continue
				}
				require.NoErrorf(t, err, "%s", r.what)
				c.check(t, objs)
			}
		})
	}
}

// requireRole asserts that objs hold the ClusterRole name with rules, and a
// ClusterRoleBinding of it to the webhook's service account.
func requireRole(t *testing.T, objs []*unstructured.Unstructured, name string, rules []any) {
	t.Helper()
	var role, binding *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "ClusterRole" && o.GetName() == name:
			role = o
		case o.GetKind() == "ClusterRoleBinding" && o.GetName() == name:
			binding = o
		}
	}
	require.NotNilf(t, role, "no ClusterRole %s", name)
	require.NotNilf(t, binding, "no ClusterRoleBinding %s", name)
	got, _, _ := unstructured.NestedSlice(role.Object, "rules")
	require.Equal(t, rules, got)
	ref, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name")
	require.Equal(t, name, ref)
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	require.Len(t, subjects, 1)
	require.Equal(t, "crd-upgrade-safety-webhook", subjects[0].(map[string]any)["name"])
}

// TestInstallChartLint: `helm lint --strict` of the chart passes.
func TestInstallChartLint(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(helmBin(t), "lint", "--strict", chartDir)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoErrorf(t, err, "helm lint:\n%s", out)
	require.Contains(t, string(out), "0 chart(s) failed")
}

// TestInstallPackageValuesSchema: the Package's valuesSchema is the
// package's values schema as ytt describes it.
func TestInstallPackageValuesSchema(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(yttBin(t), "-f", filepath.Join(packageDir, "config", "values-schema.yaml"),
		"--data-values-schema-inspect", "-o", "openapi-v3").CombinedOutput()
	require.NoErrorf(t, err, "%s", out)
	var inspected struct {
		Components struct {
			Schemas struct {
				DataValues map[string]any `json:"dataValues"`
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(out, &inspected))
	require.NotEmpty(t, inspected.Components.Schemas.DataValues)
	pkg := readManifests(t, filepath.Join(packageDir, "package.yaml"))
	require.Len(t, pkg, 1)
	committed, _, _ := unstructured.NestedMap(pkg[0].Object, "spec", "valuesSchema", "openAPIv3")
	require.Equal(t, inspected.Components.Schemas.DataValues, committed,
		"carvel-package/package.yaml's valuesSchema is not config/values-schema.yaml's (regenerate it with ytt --data-values-schema-inspect -o openapi-v3)")
}

// docSection is the text of docs/webhook.md from the heading to the next
// heading of the same level.
func docSection(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "webhook.md"))
	require.NoError(t, err)
	doc := string(data)
	start := strings.Index(doc, "\n"+heading+"\n")
	require.NotEqualf(t, -1, start, "docs/webhook.md has no %q", heading)
	rest := doc[start+len(heading)+2:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// codeBlocks is the fenced code blocks of a text in the language lang.
func codeBlocks(text, lang string) []string {
	var blocks []string
	for {
		start := strings.Index(text, "```"+lang+"\n")
		if start < 0 {
			return blocks
		}
		text = text[start+len(lang)+4:]
		end := strings.Index(text, "```")
		if end < 0 {
			return blocks
		}
		blocks = append(blocks, text[:end])
		text = text[end+3:]
	}
}

// schemaHas says whether the package's values schema (ytt's OpenAPI
// description) has the dotted path.
func schemaHas(schema map[string]any, path string) bool {
	cur := schema
	for _, p := range strings.Split(path, ".") {
		props, _ := cur["properties"].(map[string]any)
		next, ok := props[p].(map[string]any)
		if !ok {
			return false
		}
		cur = next
	}
	return true
}

// TestInstallDocs: docs/webhook.md's install sections run: the
// PackageRepository, values and PackageInstall of "Install as a Carvel
// package" name the package and its repository bundle, and the values
// render; every value of its table is in the package's values schema; the
// helm commands of "Install with Helm" render with `helm template` (the
// same flags, the checkout's chart) and do what the text says.
func TestInstallDocs(t *testing.T) {
	t.Parallel()
	section := docSection(t, "## Install as a Carvel package")
	blocks := codeBlocks(section, "yaml")
	require.Len(t, blocks, 1, "one YAML block of the install")
	objs := yamlDocs(t, []byte(blocks[0]))
	kinds := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		kinds[o.GetKind()] = o
	}
	require.Len(t, kinds, 3)
	image, _, _ := unstructured.NestedString(kinds["PackageRepository"].Object, "spec", "fetch", "imgpkgBundle", "image")
	require.True(t, strings.HasPrefix(image, "ghcr.io/crdsafety/kapp-package-repository:"), image)
	ref, _, _ := unstructured.NestedString(kinds["PackageInstall"].Object, "spec", "packageRef", "refName")
	require.Equal(t, packageRefName, ref)
	values, _, _ := unstructured.NestedString(kinds["Secret"].Object, "stringData", "values.yaml")
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(valuesFile, []byte(values), 0o600))
	rendered, err := renderPackage(t, "--data-values-file", valuesFile)
	require.NoError(t, err, "the doc's values")
	require.NotEmpty(t, rendered)

	pkg := readManifests(t, filepath.Join(packageDir, "package.yaml"))
	schema, _, _ := unstructured.NestedMap(pkg[0].Object, "spec", "valuesSchema", "openAPIv3")
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		rows++
		first := strings.Split(line, "|")[1]
		for _, name := range strings.Split(first, ",") {
			name = strings.Trim(strings.TrimSpace(name), "`")
			require.Truef(t, schemaHas(schema, name), "docs/webhook.md names the value %s, which the package does not have", name)
		}
	}
	require.GreaterOrEqual(t, rows, 8, "the table of values")

	// The helm commands, rendered.
	helmBlocks := codeBlocks(docSection(t, "## Install with Helm"), "bash")
	require.Len(t, helmBlocks, 1)
	text := strings.ReplaceAll(helmBlocks[0], "\\\n", " ")
	var commands [][]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		secret := strings.HasPrefix(line, "#   --set tls.source=secret")
		if c, _, _ := strings.Cut(line, "#"); c != "" {
			line = c
		} else if !secret {
			continue
		}
		if secret {
			// The variant: the first command with these flags.
			line = strings.Join(commands[0], " ") + " " + strings.TrimPrefix(line, "#")
		}
		fields := strings.Fields(line)
		if len(fields) > 0 && fields[0] == "helm" {
			fields = fields[1:]
		}
		if len(fields) > 0 {
			commands = append(commands, fields)
		}
	}
	require.Len(t, commands, 3, "helm install, its variant with a Secret, helm upgrade: %q", commands)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600))
	for i, c := range commands {
		require.Containsf(t, []string{"install", "upgrade"}, c[0], "%q", c)
		require.Equal(t, "crd-upgrade-safety-webhook-X.Y.Z.tgz", c[2])
		require.Contains(t, c, "--wait=watcher", "the registration after the server is ready needs Helm's wait")
		var args []string
		for _, a := range c[3:] {
			switch {
			case a == "--wait=watcher" || a == "--create-namespace" || a == "--reuse-values":
				// Flags of a release, not of a rendering.
			case a == "tls.caBundle=ca.crt":
				args = append(args, "tls.caBundle="+caFile)
			default:
				args = append(args, a)
			}
		}
		// The checkout's chart, with the image a release's has.
		args = append([]string{"template", c[1], chartDir, "--set", "image=" + imagePlaceholder}, args...)
		cmd := exec.Command(helmBin(t), args...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		require.NoErrorf(t, err, "helm %s:\n%s", strings.Join(args, " "), out)
		objs := yamlDocs(t, out)
		switch i {
		case 0:
			require.Equal(t, 1, countKind(objs, "Certificate")-1, "cert-manager: the CA and the serving certificate")
		case 1:
			require.Zero(t, countKind(objs, "Certificate"))
			require.Contains(t, string(out), "caBundle: ")
		case 2:
			cm := byKind(t, objs, "ConfigMap", "")
			require.Contains(t, cm.Object["data"].(map[string]any)["settings.yaml"], "mode: warn")
		}
	}
}

func countKind(objs []*unstructured.Unstructured, kind string) int {
	n := 0
	for _, o := range objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n
}

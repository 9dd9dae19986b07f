package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Real clients against the admission webhook (issue 32, item 5): Helm 3
// ($HELM3, hack/helm3.sh) and Helm 4 ($HELM, hack/ssaclients.sh) upgrading
// and uninstalling a chart whose templates/ holds the CRD (Helm updates and
// deletes those; it never touches crds/), and kubectl writing the CRD with
// a server-side apply, a replace and a JSON patch. Each unsafe write is
// refused with the webhook's findings in the client's own output and leaves
// the CRD as it was (spec, resourceVersion, custom resources); a safe write
// by the same client goes through. The webhook runs and is registered as in
// webhook_test.go.

// The unsafe update of every client: the enum value blue removed from
// spec.color, which the stored custom resource default/second holds.
const (
	clientsUnsafe = "live/blue-removed.yaml"
	clientsSafe   = "safe/new.yaml"
)

// requireClientRefused asserts a client's write of n's CRD failed with the
// webhook's denial and its enum finding in the client's output, and that
// the CRD and its custom resources are as before (rv: the CRD's
// resourceVersion before).
func (e *env) requireClientRefused(t *testing.T, n names, out string, err error, before snapshot, rv string) {
	t.Helper()
	require.Errorf(t, err, "the unsafe update went through:\n%s", out)
	require.Contains(t, out, webhookDenial+n.CRD+": 1 error finding:")
	requireFinding(t, out, "enum", n.CRD, "v1", "^.spec.color", `["blue"]`, "rejected: default/second")
	e.requireUnchanged(t, n, before)
	require.Equal(t, rv, e.getCRD(t, n).GetResourceVersion(), "the refused update wrote the CRD")
}

// helmCRDChart writes a chart whose templates/crd.yaml is the rendered CRD
// template and returns its directory.
func helmCRDChart(t *testing.T, n names, template string) string {
	t.Helper()
	return dir(t, map[string][]byte{
		"Chart.yaml":         []byte("apiVersion: v2\nname: crds\nversion: 0.1.0\n"),
		"templates/crd.yaml": n.render(t, template),
	})
}

// helmClients are the Helm CLIs under test: Helm 3 and Helm 4, each
// with the major version `helm version` must report.
var helmClients = []struct {
	name, major string
	new         func(t *testing.T, e *env) helmRun
}{
	{"helm3", "v3.", newHelm3},
	{"helm4", "v4.", newHelm},
}

// forEachHelm runs test in parallel subtests, one per Helm client (Helm 3,
// Helm 4), each with an env of its own, the client and its major version
// ("v3.").
func forEachHelm(t *testing.T, test func(t *testing.T, e *env, h helmRun, major string)) {
	t.Parallel()
	for _, c := range helmClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			test(t, e, c.new(t, e), c.major)
		})
	}
}

// helmCRDRelease installs release n.App of the chart holding the base CRD
// in templates/, creates the custom resources, and registers the webhook
// for the CRD. When the test ends the CRD (with its custom resources) and
// the release's records are deleted, after the webhook's registration.
func (e *env) helmCRDRelease(t *testing.T, h helmRun, n names) *webhookProc {
	t.Helper()
	t.Cleanup(func() {
		err := e.core.CoreV1().Secrets("default").DeleteCollection(tctx(t), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: "owner=helm,name=" + n.App})
		if err != nil {
			t.Errorf("cleanup: deleting the Secrets of release %s: %v", n.App, err)
		}
		err = e.dyn.Resource(crdGVR).Delete(tctx(t), n.CRD, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting CRD %s: %v", n.CRD, err)
		}
	})
	out, err := h.run(t, "install", n.App, helmCRDChart(t, n, "base/crd.yaml"), "--namespace", "default")
	require.NoError(t, err, out)
	e.waitEstablished(t, n.CRD)
	e.createCRs(t, n, "base/crs.yaml")
	p := e.startWebhook(t, "")
	e.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
	e.requireWebhookCalled(t, n, p)
	return p
}

// TestWebhookHelmUpgrade: `helm upgrade` by Helm 3 (a three-way merge
// patch) and by Helm 4 (server-side apply) of a release whose templates/
// hold the CRD, to an update the stored objects break, is refused with the
// findings in Helm's error and changes nothing; the next upgrade, safe,
// goes through.
func TestWebhookHelmUpgrade(t *testing.T) {
	forEachHelm(t, func(t *testing.T, e *env, h helmRun, major string) {
		out, err := h.run(t, "version", "--short")
		require.NoError(t, err, out)
		require.Truef(t, strings.HasPrefix(out, major), "not Helm %s: %s", major, out)
		n := newNames(t)
		e.helmCRDRelease(t, h, n)
		before := e.snapshot(t, n)
		rv := e.getCRD(t, n).GetResourceVersion()

		out, err = h.run(t, "upgrade", n.App, helmCRDChart(t, n, clientsUnsafe), "--namespace", "default")
		require.Contains(t, out, "UPGRADE FAILED")
		e.requireClientRefused(t, n, out, err, before, rv)

		out, err = h.run(t, "upgrade", n.App, helmCRDChart(t, n, clientsSafe), "--namespace", "default")
		require.NoError(t, err, out)
		require.Contains(t, e.crdSchemaJSON(t, n, "v1"), "priority")
	})
}

// TestWebhookHelmUninstall: `helm uninstall` by Helm 3 and Helm 4 of a
// release whose templates/ hold a CRD with custom resources: the webhook
// judges the DELETE (its log says so) and refuses it, and the CRD and its
// custom resources are still there. Helm's error names only the release
// ("failed to delete release: NAME"); the cause, with the webhook's
// finding, is in its --debug output (helm/helm#12829), which a second
// uninstall shows. With the waiver annotation on the CRD, the uninstall
// then goes through.
func TestWebhookHelmUninstall(t *testing.T) {
	forEachHelm(t, func(t *testing.T, e *env, h helmRun, _ string) {
		n := newNames(t)
		p := e.helmCRDRelease(t, h, n)
		before := e.snapshot(t, n)
		deniedDelete := regexp.MustCompile(`op=DELETE crd=` + regexp.QuoteMeta(n.CRD) + ` .*dryRun=false allowed=false errors=1 `)

		out, err := h.run(t, "uninstall", n.App, "--namespace", "default")
		require.Errorf(t, err, "helm uninstall succeeded:\n%s", out)
		require.Contains(t, out, "Error: failed to delete release: "+n.App)
		require.Len(t, deniedDelete.FindAllString(p.log.String(), -1), 1, "the webhook's log has no denied DELETE of the CRD")
		e.requireUnchanged(t, n, before)

		out, err = h.run(t, "uninstall", n.App, "--namespace", "default", "--debug")
		require.Errorf(t, err, "helm uninstall succeeded:\n%s", out)
		require.Contains(t, out, "Failed to delete release")
		require.Contains(t, out, "CRDUpgradeSafety denied the delete of CRD "+n.CRD+": 1 error finding:")
		requireFinding(t, out, "crdDeletion", n.CRD, "deleting the CRD would delete its 2 existing custom resources")
		require.Len(t, deniedDelete.FindAllString(p.log.String(), -1), 2)
		e.requireUnchanged(t, n, before)

		// A waiver annotation on the CRD does not pass the loss (issue
		// 37): the uninstall is denied again. The documented way to
		// delete it on purpose (docs/webhook.md): delete the custom
		// resources first (or accept the loss in the webhook's
		// settings), then the uninstall again.
		e.annotateCRD(t, n, map[string]string{config.WaiveAnnotation: "crdDeletion", config.WaiveReasonAnnotation: "e2e: data no longer needed"})
		out, err = h.run(t, "uninstall", n.App, "--namespace", "default")
		require.Errorf(t, err, "helm uninstall succeeded with a waiver annotation:\n%s", out)
		require.Len(t, deniedDelete.FindAllString(p.log.String(), -1), 3)
		require.NoError(t, e.dyn.Resource(n.gvr("v1")).Namespace("default").DeleteCollection(tctx(t), metav1.DeleteOptions{}, metav1.ListOptions{}))
		out, err = h.run(t, "uninstall", n.App, "--namespace", "default")
		require.NoError(t, err, out)
		require.Contains(t, out, `release "`+n.App+`" uninstalled`)
		require.Eventually(t, func() bool { return e.getCRD(t, n) == nil }, 30*time.Second, 200*time.Millisecond,
			"CRD %s still exists after the uninstall", n.CRD)
	})
}

// TestWebhookKubectlWriters: `kubectl apply --server-side`, `kubectl
// replace` and `kubectl patch --type=json` of an unsafe update are each
// refused with the findings in kubectl's error and change nothing; a safe
// update by each goes through.
func TestWebhookKubectlWriters(t *testing.T) {
	t.Parallel()
	kubectl := os.Getenv("KUBECTL")
	if kubectl == "" {
		t.Skip("KUBECTL is not set: the path of a kubectl binary (hack/test-e2e.sh sets it to the cluster's version's kubectl)")
	}
	// The JSON pointer of spec.color's enum in version v1.
	const enum = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color/enum"
	writers := []struct {
		name string
		// args returns kubectl's arguments writing the CRD template (or
		// the patch standing for it).
		args func(t *testing.T, n names, template string) []string
		// safeShows is what the live v1 schema holds after the safe write.
		safeShows string
	}{
		{"apply-server-side", func(t *testing.T, n names, template string) []string {
			// --force-conflicts: kapp, not kubectl, manages the CRD's fields.
			return []string{"apply", "--server-side", "--force-conflicts", "-f", crdFile(t, n, template)}
		}, "priority"},
		{"replace", func(t *testing.T, n names, template string) []string {
			return []string{"replace", "-f", crdFile(t, n, template)}
		}, "priority"},
		{"patch-json", func(t *testing.T, n names, template string) []string {
			patch := []map[string]any{{"op": "test", "path": enum + "/2", "value": "blue"}, {"op": "remove", "path": enum + "/2"}}
			if template == clientsSafe {
				patch = []map[string]any{{"op": "add", "path": enum + "/-", "value": "yellow"}}
			}
			data, err := json.Marshal(patch)
			require.NoError(t, err)
			return []string{"patch", "customresourcedefinition", n.CRD, "--type=json", "-p", string(data)}
		}, "yellow"},
	}
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			e, n, _ := webhookApp(t, "")
			before := e.snapshot(t, n)
			rv := e.getCRD(t, n).GetResourceVersion()
			run := func(template string) (string, error) {
				args := w.args(t, n, template)
				out, err := exec.Command(kubectl, append([]string{"--kubeconfig", e.kubeconfig}, args...)...).CombinedOutput()
				t.Logf("$ kubectl %s  # %s\n%s", strings.Join(args, " "), template, indent(string(out)))
				return string(out), err
			}

			out, err := run(clientsUnsafe)
			e.requireClientRefused(t, n, out, err, before, rv)

			out, err = run(clientsSafe)
			require.NoError(t, err, out)
			require.Contains(t, e.crdSchemaJSON(t, n, "v1"), w.safeShows)
		})
	}
}

// crdFile writes a rendered CRD template to a file and returns its path.
func crdFile(t *testing.T, n names, template string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crd.yaml")
	require.NoError(t, os.WriteFile(path, n.render(t, template), 0o600))
	return path
}

package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestInstallHelmChart: Helm 4 ($HELM) installs the chart
// (charts/crd-upgrade-safety-webhook) with the loopback server's
// certificate and URL, waiting for the release's objects (--wait=watcher:
// the registration, a post-install hook, comes after the server is ready);
// the installed webhook refuses an unsafe CRD update and allows a safe
// one. An upgrade with settings.mode=warn changes the settings ConfigMap
// and rolls the pods (the pod template's checksum); the server, restarted
// with the new ConfigMap's settings as the rolled pods would be, lets the
// unsafe update through with its findings as warnings. `helm uninstall`
// removes everything, the registration first (the pre-delete hook).
func TestInstallHelmChart(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	helm := newHelm(t, e)
	b := make([]byte, 3)
	_, err := rand.Read(b)
	require.NoError(t, err)
	ns := fmt.Sprintf("e2e-helm-%x", b)
	e.labelCRD(t, n, installSelectorLabel, n.App)
	e.deleteRegistrationOnFailure(t, ns)
	e.standInForKubelet(t, ns)
	t.Cleanup(func() {
		_ = e.core.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	valuesFile := func(p *webhookProc, mode string) string {
		data, err := yaml.Marshal(installValues(p, ns, n.App, mode))
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		return path
	}

	p := e.startWebhook(t, "mode: error\nfailMode: closed\n")
	_, err = helm.run(t, "install", ns, chartDir, "--namespace", ns, "--create-namespace",
		"--wait=watcher", "--timeout", "2m", "--values", valuesFile(p, "error"))
	require.NoError(t, err)
	dep, err := e.core.AppsV1().Deployments(ns).Get(tctx(t), ns+"-webhook", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(2), *dep.Spec.Replicas)
	require.Equal(t, int32(2), dep.Status.AvailableReplicas, "Helm went on before the Deployment was ready")
	checksum := dep.Spec.Template.Annotations["checksum/settings"]
	vwc := e.registration(t, ns)
	require.NotNil(t, vwc, "no registration after the install")
	require.Equal(t, p.url(), *vwc.Webhooks[0].ClientConfig.URL)
	require.False(t, vwc.CreationTimestamp.Before(&dep.CreationTimestamp), "the registration was created before the server")
	require.Equal(t, map[string]any{"mode": "error", "failMode": "closed"}, e.settingsOf(t, ns))
	e.requireInstalledWebhookJudges(t, n, p)

	// The upgrade: mode warn. The server restarts with the new settings,
	// as the rolled pods do (the registration follows its new URL).
	p.stop(t)
	p2 := e.startWebhook(t, "mode: warn\nfailMode: closed\n")
	_, err = helm.run(t, "upgrade", ns, chartDir, "--namespace", ns,
		"--wait=watcher", "--timeout", "2m", "--values", valuesFile(p2, "warn"))
	require.NoError(t, err)
	require.Equal(t, map[string]any{"mode": "warn", "failMode": "closed"}, e.settingsOf(t, ns),
		"the upgrade did not change the settings")
	dep, err = e.core.AppsV1().Deployments(ns).Get(tctx(t), ns+"-webhook", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEqual(t, checksum, dep.Spec.Template.Annotations["checksum/settings"], "the pods do not roll on a change of the settings")
	vwc = e.registration(t, ns)
	require.NotNil(t, vwc, "no registration after the upgrade")
	require.Equal(t, p2.url(), *vwc.Webhooks[0].ClientConfig.URL)
	e.requireWebhookCalled(t, n, p2)
	before := e.snapshot(t, n)
	warnings, err := e.updateCRD(t, n, "unsafe/enum-value-removed/new.yaml", false, nil)
	require.NoError(t, err, "mode warn: the unsafe update is allowed")
	require.NotEmpty(t, warnings, "mode warn: the findings come back as warnings")
	t.Logf("warnings: %q", warnings)
	require.NotEqual(t, before.CRDSpec, e.snapshot(t, n).CRDSpec, "mode warn: the update was not applied")

	// Uninstall: the registration goes first, then the rest.
	e.requireRemovedInOrder(t, ns, "release", func() {
		_, err := helm.run(t, "uninstall", ns, "--namespace", ns, "--wait", "--timeout", "2m")
		require.NoError(t, err)
	})
}

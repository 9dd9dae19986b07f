package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// converterDeployment is a Namespace and a Deployment "converter" of one
// replica in it, with extra annotations on the Deployment: the workload
// of a conversion webhook (its image is never pulled: the fake kubelet
// runs the hook of the test instead).
func converterDeployment(ns string, annotations map[string]string) []byte {
	var ann strings.Builder
	if len(annotations) > 0 {
		ann.WriteString("  annotations:\n")
		for k, v := range annotations {
			fmt.Fprintf(&ann, "    %s: %q\n", k, v)
		}
	}
	return fmt.Appendf(nil, `apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: converter
  namespace: %[1]s
%[2]sspec:
  replicas: 1
  selector:
    matchLabels:
      app: converter
  template:
    metadata:
      labels:
        app: converter
    spec:
      containers:
      - name: webhook
        image: registry.k8s.io/pause:3.10
`, ns, ann.String())
}

// convWebhookOnStart is a fake kubelet hook that starts a build of the
// conversion webhook at addr with cert (the URL a CRD names before the
// webhook runs), once; *w is the running webhook, stopped when the test
// ends.
func convWebhookOnStart(t *testing.T, build string, n names, addr string, cert webhooktest.Cert) (podHook, func() *convWebhook) {
	t.Helper()
	bin := convWebhookBinary(t, build)
	var mu sync.Mutex
	var w *convWebhook
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if w != nil {
			if err := w.stop(); err != nil {
				t.Error(err)
			}
			t.Logf("conversion webhook (%s) log:\n%s", build, indent(w.log.String()))
		}
	})
	hook := func(_ context.Context, _ *corev1.Pod) error {
		mu.Lock()
		defer mu.Unlock()
		if w != nil {
			return nil
		}
		started, err := launchConvWebhook(bin, build, n, addr, cert)
		if err != nil {
			return err
		}
		w = started
		return nil
	}
	return hook, func() *convWebhook {
		mu.Lock()
		defer mu.Unlock()
		return w
	}
}

// healthz GETs the webhook's /healthz over TLS with its CA.
func (w *convWebhook) healthz() error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.CABundle)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := client.Get(strings.TrimSuffix(w.URL, "/convert") + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s: %s", resp.Status, body)
	}
	return nil
}

// TestFakeKubeletDeploymentBecomesAvailable: kapp deploy of a Deployment
// waits until it is available and succeeds, on a cluster without a
// kubelet or scheduler, with the fake kubelet standing in for both; the
// pod's hook started a conversion webhook before the pod was Ready. And
// without the fake kubelet the same deploy does not finish.
func TestFakeKubeletDeploymentBecomesAvailable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	ns := n.App
	cert, err := webhooktest.WriteCert(t.TempDir())
	require.NoError(t, err)
	hook, webhook := convWebhookOnStart(t, buildLossless, n, freeLoopbackAddr(t), cert)
	k := e.startFakeKubelet(t, ns, map[string]podHook{"converter": hook})
	e.cleanupApp(t, n.App) // before the fake kubelet stops: it deletes the pods

	r := e.deployOK(t, n.App, []string{dir(t, map[string][]byte{"app.yaml": converterDeployment(ns, nil)})})
	require.Contains(t, r.out, "ok: reconcile deployment/converter (apps/v1) namespace: "+ns)
	dep, err := e.core.AppsV1().Deployments(ns).Get(tctx(t), "converter", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(1), dep.Status.AvailableReplicas)
	require.Len(t, k.readyPods(), 1)
	w := webhook()
	require.NotNil(t, w, "the hook of the converter's pod started the webhook")
	require.NoError(t, w.healthz())

	t.Run("without the fake kubelet", func(t *testing.T) {
		other := newNames(t)
		e.cleanupApp(t, other.App)
		r := e.deploy(t, other.App, []string{dir(t, map[string][]byte{"app.yaml": converterDeployment(other.App, nil)})},
			"--wait-timeout=5s")
		require.NotEqual(t, 0, r.exitCode, "no kubelet, no available replica: kapp waits until its timeout")
		require.Contains(t, r.out, "Timed out waiting")
	})
}

// TestFakeKubeletOrdersWebhookBeforeCRD is the ordering of issue 39 item 3
// with kapp's own annotations, on the real apiserver: one kapp deploy
// ships the Deployment of a conversion webhook (change group
// e2e.example.com/converter) and the Widget CRD that names the webhook
// (change rule "upsert after upserting e2e.example.com/converter"). kapp
// rolls the Deployment out and waits for it (the fake kubelet's hook
// starts the lossless build at the CRD's URL before the pod is Ready), and
// only then updates the CRD: the stored objects read at v2 at once.
func TestFakeKubeletOrdersWebhookBeforeCRD(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	ns := n.App
	cert, err := webhooktest.WriteCert(t.TempDir())
	require.NoError(t, err)
	addr := freeLoopbackAddr(t)
	hook, webhook := convWebhookOnStart(t, buildLossless, n, addr, cert)
	e.startFakeKubelet(t, ns, map[string]podHook{"converter": hook})
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{crdDir(t, n, "conversion/widget/old.yaml")})
	e.conversionNoneAtCleanup(t, n)
	e.createCRs(t, n, "conversion/widget/objects.yaml")

	const groupName = "e2e.example.com/converter"
	crd := strings.Replace(string(widgetNewCRD(t, n, "https://"+addr+"/convert", cert.PEM)),
		"metadata:\n  name: "+n.CRD+"\n",
		"metadata:\n  name: "+n.CRD+"\n  annotations:\n    kapp.k14s.io/change-rule: \"upsert after upserting "+groupName+"\"\n", 1)
	require.Contains(t, crd, "change-rule")
	files := dir(t, map[string][]byte{
		"crd.yaml": []byte(crd),
		"app.yaml": converterDeployment(ns, map[string]string{"kapp.k14s.io/change-group": groupName}),
	})
	r := e.deployOK(t, n.App, []string{files})
	ready := strings.Index(r.out, "ok: reconcile deployment/converter")
	update := strings.Index(r.out, "update customresourcedefinition/"+n.CRD)
	require.True(t, ready >= 0 && update > ready, "kapp waits for the webhook's Deployment before it updates the CRD:\n%s", r.out)
	require.NotNil(t, webhook(), "the hook started the webhook")

	list, err := e.dyn.Resource(n.gvr("v2")).Namespace("default").List(tctx(t), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, len(widgetNames))
	requireReviewed(t, webhook(), "small", "v1", "v2")
}

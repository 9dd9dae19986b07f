package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// apiserverWebhookClient is the common name of the client certificate
// hack/cluster.sh has the apiserver present to admission webhooks (its
// AdmissionConfiguration, written by clusterutil certs), signed by the
// cluster's CA.
const apiserverWebhookClient = "kube-apiserver-webhook-client"

// TestWebhookClientCertificate: the webhook served with --client-ca-file
// (the cluster's CA) and --client-allowed-names judges the reviews the
// apiserver sends, which presents its client certificate (the
// AdmissionConfiguration of docs/webhook.md, as hack/cluster.sh starts
// kube-apiserver), and refuses at the TLS handshake a client without a
// certificate, or with one of another CA, before reading a byte of its
// request; its probes answer on the plain health address.
func TestWebhookClientCertificate(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	dir := t.TempDir()
	require.NotEmpty(t, e.rest.TLSClientConfig.CAData, "the kubeconfig holds the cluster's CA")
	caFile := filepath.Join(dir, "cluster-ca.crt")
	require.NoError(t, os.WriteFile(caFile, e.rest.TLSClientConfig.CAData, 0o600))
	p := e.startWebhookAs(t, "", e.webhookKubeconfig(t), "--client-ca-file", caFile,
		"--client-allowed-names", apiserverWebhookClient, "--health-probe-bind-address", "127.0.0.1:0")
	require.Contains(t, p.log.String(), "clients must present a certificate of the CA of "+caFile)
	e.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)

	// The apiserver's reviews get through: an unsafe update is denied by
	// the webhook's judgement (with failurePolicy Fail, a refused call would
	// be denied too, but as a failed call), a safe one is allowed.
	before := e.snapshot(t, n)
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, err = e.updateCRD(t, n, "unsafe/enum-value-removed/new.yaml", true, nil)
		if err != nil && strings.Contains(err.Error(), webhookDenial) {
			break
		}
		time.Sleep(250 * time.Millisecond) // the registration reaches the apiserver's informer
	}
	require.Error(t, err)
	require.NotContains(t, err.Error(), "failed calling webhook",
		"the apiserver presents no client certificate of the cluster's CA: start the cluster with this tree's hack/cluster.sh")
	require.Contains(t, err.Error(), webhookDenial+n.CRD+": 1 error finding:")
	requireFinding(t, err.Error(), "enum", n.CRD, "v1", "^.spec.color")
	e.requireUnchanged(t, n, before)
	_, err = e.updateCRD(t, n, "safe/new.yaml", false, nil)
	require.NoError(t, err)
	require.Contains(t, p.log.String(), "crd="+n.CRD+" ")

	// A direct POST of a made-up review, as any pod could send one.
	newCRD := &apiextv1.CustomResourceDefinition{}
	obj := e.getCRD(t, n)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, newCRD))
	req, err := webhooktest.Request(admissionv1.Update, newCRD, newCRD.DeepCopy())
	require.NoError(t, err)
	body, err := webhooktest.Review(req)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.cert.PEM)
	config := func(certs ...tls.Certificate) *tls.Config {
		cfg := &tls.Config{RootCAs: pool}
		if len(certs) > 0 {
			// Presented whatever CAs the server names as acceptable (Go's
			// client would otherwise keep a certificate of another CA to
			// itself).
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
		}
		return cfg
	}
	// refused posts the review, which must fail, and returns why the
	// server refused the handshake: the alert it sends (read on a
	// connection of its own, since under TLS 1.3 a client's write can race
	// the alert).
	refused := func(certs ...tls.Certificate) string {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: config(certs...)}}
		resp, err := c.Post(p.url(), "application/json", bytes.NewReader(body))
		if err == nil {
			_ = resp.Body.Close()
			t.Fatalf("a POST was answered %s", resp.Status)
		}
		conn, err := tls.Dial("tcp", p.addr, config(certs...))
		if err != nil {
			return err.Error()
		}
		defer conn.Close()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = conn.Read(make([]byte, 1))
		require.Error(t, err)
		return err.Error()
	}
	require.Contains(t, refused(), "certificate required", "no client certificate: refused at the TLS handshake")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "other"), 0o700))
	other, err := webhooktest.WriteClientCert(filepath.Join(dir, "other"), apiserverWebhookClient)
	require.NoError(t, err)
	pair, err := tls.LoadX509KeyPair(other.CertFile, other.KeyFile)
	require.NoError(t, err)
	require.Contains(t, refused(pair), "unknown certificate authority",
		"a certificate of the apiserver's name from another CA: refused at the TLS handshake")
	require.NotContains(t, p.log.String(), "uid="+string(req.UID), "no refused request was reviewed")
	require.Contains(t, p.log.String(), "TLS handshake error", "the refusals are logged")

	// The probes, on the plain health address.
	m := healthLine.FindStringSubmatch(p.log.String())
	require.NotNil(t, m, "the webhook logs its health address")
	resp, err := http.Get("http://" + m[1] + "/readyz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

package tools

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
)

// TestWebhookCommand runs the command as it runs in a pod (flags, a
// settings file) over an in-memory cluster, and sends it a review over TLS.
func TestWebhookCommand(t *testing.T) {
	dir := t.TempDir()
	cert, err := webhooktest.WriteCert(dir)
	require.NoError(t, err)
	settings := filepath.Join(dir, "settings.yaml")
	require.NoError(t, os.WriteFile(settings, []byte("mode: warn\n"), 0o644))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening := make(chan net.Addr, 1)
	var log bytes.Buffer
	o := NewCRDUpgradeSafetyWebhookOptions(ui.NewNoopUI(), nil)
	o.Cluster = func() (evaluation.Cluster, error) { return &evaluationtest.Cluster{}, nil }
	o.Context, o.Log, o.Listening = ctx, &log, func(a net.Addr) { listening <- a }
	cmd := NewCRDUpgradeSafetyWebhookCmd(o, cmdcore.FlagsFactory{})
	cmd.SetArgs([]string{"--bind-address", "127.0.0.1", "--secure-port", "0", "--tls-cert-file", cert.CertFile,
		"--tls-private-key-file", cert.KeyFile, "--config", settings})
	done, addrs := executeUntilListening(t, cmd, listening)
	addr := addrs[0]

	oldCRD, newCRD := testcrd.MustCRD(t, testcrd.OldCRD), testcrd.MustCRD(t, testcrd.UnsafeCRD)
	req, err := webhooktest.Request(admissionv1.Update, newCRD, oldCRD)
	require.NoError(t, err)
	body, err := webhooktest.Review(req)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert.PEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Post("https://"+addr.String()+"/validate?timeout=10s", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var review admissionv1.AdmissionReview
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&review))
	require.True(t, review.Response.Allowed, "mode warn from --config")
	require.Len(t, review.Response.Warnings, 2)

	cancel()
	require.NoError(t, <-done)
	require.Contains(t, log.String(), "settings: mode warn, failMode closed, 0 waivers, liveChecksTimeout 5m0s (config: "+settings+")")
	require.Contains(t, log.String(), "review uid="+string(req.UID)+" op=UPDATE crd=widgets.example.com")
	require.Contains(t, log.String(), "stopped")
}

// TestWebhookCommandMetricsAndJSONLogs runs the command with
// --metrics-bind-address and --log-format json: a review shows in the
// metrics, and every log line is a JSON object.
func TestWebhookCommandMetricsAndJSONLogs(t *testing.T) {
	cert, err := webhooktest.WriteCert(t.TempDir())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening, metricsListening := make(chan net.Addr, 1), make(chan net.Addr, 1)
	var log syncBuffer
	o := NewCRDUpgradeSafetyWebhookOptions(ui.NewNoopUI(), nil)
	o.Cluster = func() (evaluation.Cluster, error) { return &evaluationtest.Cluster{}, nil }
	o.Context, o.Log = ctx, &log
	o.Listening, o.MetricsListening = func(a net.Addr) { listening <- a }, func(a net.Addr) { metricsListening <- a }
	cmd := NewCRDUpgradeSafetyWebhookCmd(o, cmdcore.FlagsFactory{})
	cmd.SetArgs([]string{"--bind-address", "127.0.0.1", "--secure-port", "0", "--tls-cert-file", cert.CertFile,
		"--tls-private-key-file", cert.KeyFile, "--metrics-bind-address", "127.0.0.1:0", "--log-format", "json"})
	done, addrs := executeUntilListening(t, cmd, listening, metricsListening)
	addr, maddr := addrs[0], addrs[1]

	req, err := webhooktest.Request(admissionv1.Update, testcrd.MustCRD(t, testcrd.UnsafeCRD), testcrd.MustCRD(t, testcrd.OldCRD))
	require.NoError(t, err)
	body, err := webhooktest.Review(req)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert.PEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Post("https://"+addr.String()+"/validate?timeout=10s", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	_ = resp.Body.Close()

	resp, err = http.Get("http://" + maddr.String() + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Contains(t, string(metrics), `crd_upgrade_safety_webhook_review_duration_seconds_count{decision="denied",operation="update"} 1`+"\n")
	require.Regexp(t, `(?m)^crd_upgrade_safety_webhook_certificate_expiry_timestamp_seconds [1-9]`, string(metrics))

	cancel()
	require.NoError(t, <-done)
	var reviews int
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var fields map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &fields), line)
		require.NotEmpty(t, fields["time"])
		if fields["msg"] == "review" {
			reviews++
			require.Equal(t, string(req.UID), fields["uid"])
			require.Equal(t, false, fields["allowed"])
		}
	}
	require.Equal(t, 1, reviews)
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWebhookCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("mode: sometimes\n"), 0o644))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "expected --tls-cert-file and --tls-private-key-file: the webhook serves TLS only"},
		{[]string{"--tls-cert-file", "c", "--tls-private-key-file", "k", "--secure-port", "70000"}, "expected --secure-port between 0 and 65535, got 70000"},
		{[]string{"--tls-cert-file", "c", "--tls-private-key-file", "k", "--config", bad},
			"reading --config: file " + bad + `: mode: unknown value "sometimes" (allowed: error, warn)`},
		{[]string{"--tls-cert-file", "c", "--tls-private-key-file", "k", "--log-format", "logfmt"},
			`--log-format: unknown value "logfmt" (allowed: json, text)`},
		{[]string{"--tls-cert-file", "c", "--tls-private-key-file", "k", "--metrics-bind-address", "8080"},
			"expected --metrics-bind-address as host:port: address 8080: missing port in address"},
		{[]string{"--tls-cert-file", "c", "--tls-private-key-file", "k", "--health-probe-bind-address", "8081"},
			"expected --health-probe-bind-address as host:port: address 8081: missing port in address"},
		{[]string{"--tls-cert-file", "c", "--tls-private-key-file", "k", "--client-allowed-names", "kube-apiserver"},
			"expected --client-ca-file with --client-allowed-names"},
	} {
		o := NewCRDUpgradeSafetyWebhookOptions(ui.NewNoopUI(), nil)
		o.Cluster = func() (evaluation.Cluster, error) { return &evaluationtest.Cluster{}, nil }
		cmd := NewCRDUpgradeSafetyWebhookCmd(o, cmdcore.FlagsFactory{})
		cmd.SetArgs(tt.args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		require.EqualError(t, cmd.Execute(), tt.want)
	}
}

// TestWebhookCommandClientCA runs the command with --client-ca-file,
// --client-allowed-names and --health-probe-bind-address: a client without
// the CA's certificate is refused at the TLS handshake, the apiserver's is
// served, and the probes answer over plain HTTP.
func TestWebhookCommandClientCA(t *testing.T) {
	dir := t.TempDir()
	cert, err := webhooktest.WriteCert(dir)
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "client"), 0o700))
	apiserver, err := webhooktest.WriteClientCert(filepath.Join(dir, "client"), "kube-apiserver")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening, health := make(chan net.Addr, 1), make(chan net.Addr, 1)
	var log bytes.Buffer
	o := NewCRDUpgradeSafetyWebhookOptions(ui.NewNoopUI(), nil)
	o.Cluster = func() (evaluation.Cluster, error) { return &evaluationtest.Cluster{}, nil }
	o.Context, o.Log = ctx, &syncWriter{w: &log}
	o.Listening, o.HealthListening = func(a net.Addr) { listening <- a }, func(a net.Addr) { health <- a }
	cmd := NewCRDUpgradeSafetyWebhookCmd(o, cmdcore.FlagsFactory{})
	cmd.SetArgs([]string{"--bind-address", "127.0.0.1", "--secure-port", "0", "--tls-cert-file", cert.CertFile,
		"--tls-private-key-file", cert.KeyFile, "--client-ca-file", apiserver.CertFile,
		"--client-allowed-names", "kube-apiserver", "--health-probe-bind-address", "127.0.0.1:0"})
	done, addrs := executeUntilListening(t, cmd, listening, health)
	addr, healthAddr := addrs[0], addrs[1]
	req, err := webhooktest.Request(admissionv1.Update, testcrd.MustCRD(t, testcrd.UnsafeCRD), testcrd.MustCRD(t, testcrd.OldCRD))
	require.NoError(t, err)
	body, err := webhooktest.Review(req)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert.PEM)
	post := func(certs ...tls.Certificate) (*http.Response, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
		return c.Post("https://"+addr.String()+"/validate?timeout=10s", "application/json", bytes.NewReader(body))
	}
	_, err = post()
	require.Error(t, err, "no client certificate: refused")
	conn, err := tls.Dial("tcp", addr.String(), &tls.Config{RootCAs: pool})
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	_ = conn.Close()
	require.ErrorContains(t, err, "certificate required", "at the TLS handshake")
	pair, err := tls.LoadX509KeyPair(apiserver.CertFile, apiserver.KeyFile)
	require.NoError(t, err)
	resp, err := post(pair)
	require.NoError(t, err)
	var review admissionv1.AdmissionReview
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&review))
	_ = resp.Body.Close()
	require.False(t, review.Response.Allowed)

	resp, err = http.Get("http://" + healthAddr.String() + "/readyz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	cancel()
	require.NoError(t, <-done)
	require.Contains(t, log.String(), "clients must present a certificate of the CA of "+apiserver.CertFile+" (allowed names: kube-apiserver)")
}

// syncWriter is a writer safe for the server's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// executeUntilListening runs cmd in the background until each of its
// listeners has said its address (in the order of listeners); done
// receives what cmd.Execute returns. A command that ends first fails t.
func executeUntilListening(t *testing.T, cmd *cobra.Command, listeners ...chan net.Addr) (chan error, []net.Addr) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	addrs := make([]net.Addr, len(listeners))
	for i, l := range listeners {
		select {
		case addrs[i] = <-l:
		case err := <-done:
			t.Fatalf("the command ended: %v", err)
		}
	}
	return done, addrs
}

package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
)

// startServer runs a Server on a free loopback port until the test ends.
func startServer(t *testing.T, certs *CertReloader) (addr string, stop func() error) {
	t.Helper()
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	return startServerWith(t, &Server{Certs: certs, Handler: NewHandler(r, 4), Logf: t.Logf})
}

// startServerWith runs srv on a free loopback port until the test ends.
func startServerWith(t *testing.T, srv *Server) (addr string, stop func() error) {
	t.Helper()
	listening := make(chan net.Addr, 1)
	srv.BindAddress, srv.SecurePort, srv.Listening = "127.0.0.1", 0, func(a net.Addr) { listening <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case a := <-listening:
		addr = a.String()
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	}
	stop = sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() { _ = stop() })
	return addr, stop
}

func client(caPEM []byte, maxTLS uint16) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: maxTLS},
		DisableKeepAlives: true,
	}}
}

func TestServer(t *testing.T) {
	cert, err := webhooktest.WriteCert(t.TempDir())
	require.NoError(t, err)
	addr, stop := startServer(t, &CertReloader{CertFile: cert.CertFile, KeyFile: cert.KeyFile, CheckInterval: time.Millisecond})
	c := client(cert.PEM, 0)

	body, err := webhooktest.Review(request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.NoError(t, err)
	resp, err := c.Post("https://"+addr+"/validate?timeout=10s", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	var review admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(data, &review))
	require.False(t, review.Response.Allowed)
	require.GreaterOrEqual(t, resp.TLS.Version, uint16(tls.VersionTLS12))
	require.Equal(t, "HTTP/1.1", resp.Proto, "no HTTP/2")

	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.Transport.(*http.Transport).TLSClientConfig.RootCAs},
		ForceAttemptHTTP2: true}}
	resp, err = h2.Get("https://" + addr + "/healthz")
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1", resp.Proto, "a client that offers HTTP/2 gets HTTP/1.1")
	_ = resp.Body.Close()

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := c.Get("https://" + addr + path)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, path)
		_ = resp.Body.Close()
	}

	t.Run("TLS only, 1.2 or newer", func(t *testing.T) {
		_, err := client(cert.PEM, tls.VersionTLS11).Get("https://" + addr + "/healthz")
		require.ErrorContains(t, err, "protocol version")
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP is answered with TLS's 400")
			_ = resp.Body.Close()
		}
	})

	t.Run("certificate reloaded when the files change", func(t *testing.T) {
		servedSerial := func() string {
			conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) // reads the served certificate
			require.NoError(t, err)
			defer conn.Close()
			return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
		}
		before := servedSerial()
		renewed, err := webhooktest.WriteCert(t.TempDir())
		require.NoError(t, err)
		for _, f := range [][2]string{{renewed.CertFile, cert.CertFile}, {renewed.KeyFile, cert.KeyFile}} {
			data, err := os.ReadFile(f[0])
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(f[1], data, 0o600))
		}
		require.Eventually(t, func() bool { return servedSerial() != before }, 5*time.Second, 10*time.Millisecond)
		// The client that trusts the renewed certificate gets through.
		resp, err := client(renewed.PEM, 0).Get("https://" + addr + "/healthz")
		require.NoError(t, err)
		_ = resp.Body.Close()

		// A broken pair keeps the last good one in use.
		require.NoError(t, os.WriteFile(cert.KeyFile, []byte("not a key"), 0o600))
		time.Sleep(5 * time.Millisecond)
		resp, err = client(renewed.PEM, 0).Get("https://" + addr + "/healthz")
		require.NoError(t, err)
		_ = resp.Body.Close()
	})

	require.NoError(t, stop())
}

func TestServerNeedsCertificate(t *testing.T) {
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	srv := &Server{BindAddress: "127.0.0.1", Certs: &CertReloader{CertFile: "/nonexistent/tls.crt", KeyFile: "/nonexistent/tls.key"},
		Handler: NewHandler(r, 1)}
	require.ErrorContains(t, srv.Run(context.Background()), "/nonexistent/tls.crt: no such file or directory")
}

// TestServerClientAuth: with ClientAuth, a review is served only to a
// client presenting a certificate of the client CA (and, with
// AllowedNames, naming one of them): any other client is refused at the
// TLS handshake, before a byte of its request is read. The probes are
// served on the plain health address.
func TestServerClientAuth(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"apiserver", "other", "sameca"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o700))
	}
	cert, err := webhooktest.WriteCert(dir)
	require.NoError(t, err)
	apiserver, err := webhooktest.WriteClientCert(filepath.Join(dir, "apiserver"), "kube-apiserver-webhook-client")
	require.NoError(t, err)
	other, err := webhooktest.WriteClientCert(filepath.Join(dir, "other"), "kube-apiserver-webhook-client")
	require.NoError(t, err)
	sameCA, err := webhooktest.WriteClientCert(filepath.Join(dir, "sameca"), "some-pod", "some-pod.default.svc")
	require.NoError(t, err)
	caFile := filepath.Join(dir, "client-ca.crt")
	// The bundle trusts the apiserver's and sameCA's self-signed certificates.
	require.NoError(t, os.WriteFile(caFile, append(append([]byte{}, apiserver.PEM...), sameCA.PEM...), 0o600))

	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	health := make(chan net.Addr, 1)
	addr, _ := startServerWith(t, &Server{Certs: &CertReloader{CertFile: cert.CertFile, KeyFile: cert.KeyFile},
		ClientAuth: &ClientAuth{CAFile: caFile, AllowedNames: []string{"kube-apiserver-webhook-client"}},
		Handler:    NewHandler(r, 4), Logf: t.Logf, HealthBindAddress: "127.0.0.1:0",
		HealthListening: func(a net.Addr) { health <- a }})
	body, err := webhooktest.Review(request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		client *webhooktest.Cert
		err    string
	}{
		{name: "the apiserver's certificate", client: &apiserver},
		{name: "no certificate", err: "certificate required"},
		{name: "a certificate of another CA", client: &other, err: "unknown certificate authority"},
		{name: "a certificate of the CA, not an allowed name", client: &sameCA, err: "bad certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := client(cert.PEM, 0)
			cfg := c.Transport.(*http.Transport).TLSClientConfig
			if tc.client != nil {
				pair, err := tls.LoadX509KeyPair(tc.client.CertFile, tc.client.KeyFile)
				require.NoError(t, err)
				// Presented whatever CAs the server names.
				cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
			}
			resp, err := c.Post("https://"+addr+"/validate?timeout=10s", "application/json", bytes.NewReader(body))
			if tc.err != "" {
				require.Error(t, err)
				require.Contains(t, handshakeRefusal(t, addr, cfg), tc.err)
				return
			}
			require.NoError(t, err)
			data, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			_ = resp.Body.Close()
			var review admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal(data, &review))
			require.False(t, review.Response.Allowed)
			require.Contains(t, review.Response.Result.Message, "[enum] enum values removed")
		})
	}

	t.Run("probes on the health address, nothing else", func(t *testing.T) {
		h := (<-health).String()
		for path, code := range map[string]int{"/healthz": 200, "/readyz": 200, "/validate": 404} {
			resp, err := http.Get("http://" + h + path)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, code, resp.StatusCode, path)
		}
	})
}

func TestServerClientCAMissing(t *testing.T) {
	cert, err := webhooktest.WriteCert(t.TempDir())
	require.NoError(t, err)
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	srv := &Server{BindAddress: "127.0.0.1", Certs: &CertReloader{CertFile: cert.CertFile, KeyFile: cert.KeyFile},
		ClientAuth: &ClientAuth{CAFile: "/nonexistent/ca.crt"}, Handler: NewHandler(r, 1)}
	require.ErrorContains(t, srv.Run(context.Background()), "loading the client CA: stat /nonexistent/ca.crt")
	empty := filepath.Join(t.TempDir(), "empty.crt")
	require.NoError(t, os.WriteFile(empty, []byte("not PEM"), 0o600))
	srv.ClientAuth = &ClientAuth{CAFile: empty}
	require.ErrorContains(t, srv.Run(context.Background()), "no PEM certificate in")
}

// handshakeRefusal is why a server refuses a client's handshake: the alert
// it sends, read on a connection of its own (under TLS 1.3 the client's
// handshake ends before the server has checked its certificate, and a
// client's write can race the alert).
func handshakeRefusal(t *testing.T, addr string, cfg *tls.Config) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, cfg.Clone())
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	require.Error(t, err, "the server refuses the client")
	return err.Error()
}

// TestClientAuthReload: a changed CA file takes effect on a later
// handshake; one that does not load keeps the last good CA.
func TestClientAuthReload(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o700))
	}
	a, err := webhooktest.WriteClientCert(filepath.Join(dir, "a"), "a")
	require.NoError(t, err)
	b, err := webhooktest.WriteClientCert(filepath.Join(dir, "b"), "b-longer-name")
	require.NoError(t, err)
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, a.PEM, 0o600))
	poolOf := func(pemData []byte) *x509.CertPool {
		p := x509.NewCertPool()
		require.True(t, p.AppendCertsFromPEM(pemData))
		return p
	}
	var logged []string
	auth := &ClientAuth{CAFile: caFile, CheckInterval: time.Millisecond,
		Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }}
	require.NoError(t, auth.Load())
	require.True(t, auth.currentPool().Equal(poolOf(a.PEM)))

	require.NoError(t, os.WriteFile(caFile, b.PEM, 0o600))
	time.Sleep(5 * time.Millisecond)
	require.True(t, auth.currentPool().Equal(poolOf(b.PEM)), "the renewed CA")

	require.NoError(t, os.WriteFile(caFile, []byte("not PEM at all, and of another size"), 0o600))
	time.Sleep(5 * time.Millisecond)
	require.True(t, auth.currentPool().Equal(poolOf(b.PEM)), "a broken file keeps the last good CA")
	time.Sleep(5 * time.Millisecond)
	auth.currentPool()
	require.Equal(t, []string{"client CA reloaded from " + caFile,
		"client CA not (re)loaded, keeping the previous one: loading the client CA: no PEM certificate in " + caFile}, logged,
		"a failure repeated at every look is logged once")
}

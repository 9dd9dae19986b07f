// Command clusterutil is the small helper of hack/cluster.sh: it does the few
// things a bash script cannot do portably without extra packages (openssl,
// curl, python).
//
//	clusterutil certs DIR            CA, serving cert for 127.0.0.1/localhost, service-account key pair, admin token,
//	                                 the client certificate the apiserver presents to admission webhooks
//	clusterutil freeports N          N currently free loopback TCP ports, one per line
//	clusterutil wait URL TIMEOUT     poll URL until it answers 200 "ok" (optional CA via -ca, token via -token-file)
//	clusterutil kubeconfig DIR URL OUT  write kubeconfig OUT for the admin token and the CA in DIR
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "certs":
		if len(os.Args) != 3 {
			usage()
		}
		err = certs(os.Args[2])
	case "freeports":
		if len(os.Args) != 3 {
			usage()
		}
		err = freePorts(os.Args[2])
	case "wait":
		err = wait(os.Args[2:])
	case "kubeconfig":
		if len(os.Args) != 5 {
			usage()
		}
		err = kubeconfig(os.Args[2], os.Args[3], os.Args[4])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "clusterutil %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: clusterutil certs DIR | freeports N | wait [-ca FILE] [-token-file FILE] URL TIMEOUT | kubeconfig DIR URL OUT")
	os.Exit(2)
}

// certs writes into dir:
//
//	ca.crt                    the CA clients trust
//	serving.crt serving.key   the apiserver's serving cert (127.0.0.1, ::1, localhost), signed by the CA
//	sa.key sa.pub             service-account signing key pair
//	token                     the admin bearer token
//	tokens.csv                kube-apiserver --token-auth-file: admin in group system:masters
//	webhook-client.crt .key   the client certificate the apiserver presents to admission webhooks
//	                          (CN kube-apiserver-webhook-client), signed by the CA
//	admission.yaml            kube-apiserver --admission-control-config-file: the admission webhooks'
//	                          AdmissionConfiguration, with admission.kubeconfig
//	admission.kubeconfig      for every webhook ('*'), the client certificate above: a webhook
//	                          served with --client-ca-file ca.crt accepts the apiserver; one that
//	                          asks for no client certificate never sees it
func certs(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kapp-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}

	clientKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	clientTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: WebhookClientName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, clientTmpl, caCert, &clientKey.PublicKey, caKey)
	if err != nil {
		return err
	}

	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return err
	}
	token := hex.EncodeToString(tok)

	files := map[string][]byte{
		"ca.crt":      pemBlock("CERTIFICATE", caDER),
		"serving.crt": pemBlock("CERTIFICATE", srvDER),
		"token":       []byte(token + "\n"),
		"tokens.csv":  []byte(token + `,admin,admin-uid,"system:masters"` + "\n"),
	}
	if files["serving.key"], err = ecKeyPEM(srvKey); err != nil {
		return err
	}
	if files["sa.key"], err = ecKeyPEM(saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	files["sa.pub"] = pemBlock("PUBLIC KEY", pub)
	files["webhook-client.crt"] = pemBlock("CERTIFICATE", clientDER)
	if files["webhook-client.key"], err = ecKeyPEM(clientKey); err != nil {
		return err
	}
	files["admission.kubeconfig"] = []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
users:
- name: '*'
  user:
    client-certificate-data: %s
    client-key-data: %s
`, base64.StdEncoding.EncodeToString(files["webhook-client.crt"]), base64.StdEncoding.EncodeToString(files["webhook-client.key"])))
	kubeconfig := filepath.Join(dir, "admission.kubeconfig")
	files["admission.yaml"] = []byte(fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %q
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %q
`, kubeconfig, kubeconfig))

	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// WebhookClientName is the common name of the client certificate the
// apiserver presents to admission webhooks.
const WebhookClientName = "kube-apiserver-webhook-client"

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func ecKeyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

// freePorts prints n distinct ports that were free on 127.0.0.1 a moment
// ago. All listeners are held until every port is chosen, so the n ports are
// distinct; another process can still take one before the caller binds it,
// which the caller handles by retrying with new ports.
func freePorts(arg string) error {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 || n > 16 {
		return fmt.Errorf("want a count between 1 and 16, got %q", arg)
	}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
	}
	return nil
}

// wait polls url until it answers 200 with body "ok" or the timeout passes.
func wait(args []string) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	caFile := fs.String("ca", "", "PEM CA to trust (https)")
	tokenFile := fs.String("token-file", "", "file holding a bearer token")
	pidArg := fs.Int("pid", 0, "give up early when this process is gone")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		usage()
	}
	url := fs.Arg(0)
	timeout, err := time.ParseDuration(fs.Arg(1))
	if err != nil {
		return err
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{}}
	if *caFile != "" {
		pemData, err := os.ReadFile(*caFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemData) {
			return fmt.Errorf("no certificate in %s", *caFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	token := ""
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return err
		}
		token = strings.TrimSpace(string(b))
	}
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	last := errors.New("not polled yet")
	for time.Now().Before(deadline) {
		if *pidArg > 0 && !alive(*pidArg) {
			return fmt.Errorf("process %d exited before %s was ready (last: %v)", *pidArg, url, last)
		}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %s: %v", url, timeout, last)
}

func alive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

// kubeconfig writes the kubeconfig file out pointing at server with the CA
// and admin token that certs wrote into dir.
func kubeconfig(dir, server, out string) error {
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: e2e
  context:
    cluster: e2e
    user: admin
    namespace: default
current-context: e2e
`, server, base64.StdEncoding.EncodeToString(ca), strings.TrimSpace(string(tok)))
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

package e2e

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// cuttingProxy is a TLS reverse proxy in front of the real apiserver that
// plays an apiserver going away at a chosen moment: it forwards every request
// until one matches cutOn, then drops that request's connection without an
// answer, closes its listener (new connections are refused) and drops every
// later request. The moment is a request, not a time, so the test is
// deterministic.
type cuttingProxy struct {
	srv   *httptest.Server
	cutOn func(*http.Request) bool
	// stallOn, when set, picks requests that are accepted and never
	// answered: they wait until the client gives up (newStallingProxy).
	stallOn func(*http.Request) bool

	cut       atomic.Bool
	mu        sync.Mutex
	requests  []string // method and URL of every request, in order
	cutAtPath string
}

func newCuttingProxy(t *testing.T, e *env, cutOn func(*http.Request) bool) *cuttingProxy {
	t.Helper()
	return newProxy(t, e, &cuttingProxy{cutOn: cutOn})
}

// newStallingProxy is a TLS reverse proxy in front of the real apiserver
// that forwards every request except those stallOn matches: it accepts them
// and never answers, an apiserver that hangs. The requests are chosen, not
// timed, so a test of the client's deadline is deterministic.
func newStallingProxy(t *testing.T, e *env, stallOn func(*http.Request) bool) *cuttingProxy {
	t.Helper()
	return newProxy(t, e, &cuttingProxy{cutOn: func(*http.Request) bool { return false }, stallOn: stallOn})
}

func newProxy(t *testing.T, e *env, p *cuttingProxy) *cuttingProxy {
	t.Helper()
	target, err := url.Parse(e.rest.Host)
	require.NoError(t, err)
	tlsCfg, err := rest.TLSConfigFor(e.rest)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: false}
	rp.FlushInterval = -1 // stream watches as they come

	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, r.Method+" "+r.URL.String())
		p.mu.Unlock()
		if p.stallOn != nil && p.stallOn(r) {
			<-r.Context().Done() // the client gave up
			return
		}
		if !p.cut.Load() && p.cutOn(r) {
			p.mu.Lock()
			p.cutAtPath = r.URL.String()
			p.mu.Unlock()
			p.cut.Store(true)
			_ = p.srv.Listener.Close()
		}
		if p.cut.Load() {
			// The apiserver is gone: no answer, the connection just ends.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		rp.ServeHTTP(w, r)
	}))
	p.srv.EnableHTTP2 = false // HTTP/1.1, so a request's connection can be cut
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	return p
}

// kubeconfig writes a kubeconfig that reaches the apiserver through the proxy
// with the admin token of the suite's kubeconfig.
func (p *cuttingProxy) kubeconfig(t *testing.T, e *env) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	require.NotEmpty(t, e.rest.BearerToken, "the suite's kubeconfig must use a token")
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: proxy
  context: {cluster: proxy, user: admin, namespace: default}
current-context: proxy
`, p.srv.URL, base64.StdEncoding.EncodeToString(ca), e.rest.BearerToken), 0o600))
	return path
}

func (p *cuttingProxy) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// TestApiserverGoneMidCheckFailsClosed: the apiserver disappears while the
// check runs, at the moment the existingResources live check LISTs the
// custom resources of the updated CRD (after kapp computed its diff). The
// deploy must fail with a clear error of our check, and nothing is applied.
// The change itself is safe, so only failing closed can explain a failure.
func TestApiserverGoneMidCheckFailsClosed(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	before := e.snapshot(t, n)

	// A LIST of the custom resources across namespaces: the existingResources
	// check. kapp itself does not read them: the app only holds the CRD.
	listCRs := regexp.MustCompile(`^/apis/` + regexp.QuoteMeta(group) + `/[^/]+/` + regexp.QuoteMeta(n.Plural) + `$`)
	proxy := newCuttingProxy(t, e, func(r *http.Request) bool {
		return r.Method == http.MethodGet && listCRs.MatchString(r.URL.Path) && r.URL.Query().Get("watch") == ""
	})
	kc := proxy.kubeconfig(t, e)

	r := e.deploy(t, n.App, []string{crdDir(t, n, "safe/new.yaml", n.marker())}, preflightFlag, "--kubeconfig", kc)
	t.Logf("requests through the proxy:\n%s", indent(fmt.Sprint(proxy.log())))
	require.Truef(t, proxy.cut.Load(), "the proxy never saw the LIST of custom resources, so the apiserver was never cut:\n%v", proxy.log())
	requireBlocked(t, r)
	require.Contains(t, r.out, n.Plural, "the error does not say what could not be read")
	e.requireUnchanged(t, n, before)
}

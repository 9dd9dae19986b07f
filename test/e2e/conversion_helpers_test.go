package e2e

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The conversion webhooks of issue 39 are the three builds of
// hack/convwebhook (hack/convwebhook.sh; CONVWEBHOOK_DIR is the folder of
// the binaries): a controller-runtime hub-and-spoke webhook for the Widget
// of testdata/conversion/widget, v1 the spoke, v2 the hub and new storage
// version. Each test runs its own on loopback for its own kind.
const (
	// buildLossless renames v1 spec.size to v2 spec.dimensions: a true
	// round trip.
	buildLossless = "lossless"
	// buildLossy drops spec.color on the way to v2.
	buildLossy = "lossy"
	// buildFailing cannot unmarshal a string in spec.replicas (an int in
	// its Go types): the objects of widgetFailing.
	buildFailing = "failing"
)

// The Widgets of testdata/conversion/widget/objects.yaml, all in namespace
// default, and those the failing build cannot convert.
var (
	widgetNames   = []string{"half", "large", "plain", "quarter", "small"}
	widgetFailing = []string{"half", "quarter"}
)

// widgetSpecs are the objects' specs as stored at v1 (JSON numbers as
// the dynamic client decodes them).
var widgetSpecs = map[string]map[string]any{
	"small":   {"size": int64(3), "color": "red", "replicas": int64(2)},
	"large":   {"size": int64(10), "color": "blue", "replicas": int64(5)},
	"half":    {"size": int64(4), "color": "green", "replicas": "50%"},
	"quarter": {"size": int64(8), "color": "yellow", "replicas": "25%"},
	"plain":   {"size": int64(1)},
}

// convWebhook is a running build of hack/convwebhook.
type convWebhook struct {
	build string
	// URL is the clientConfig.url of a CRD (https://ADDR/convert), and
	// CABundle the PEM of its CA (the serving certificate, its own CA).
	URL      string
	CABundle []byte
	cmd      *exec.Cmd
	log      *syncBuffer
	done     chan error
	once     sync.Once
}

var convServingLine = regexp.MustCompile(`serving conversion reviews on (https://\S+/convert)`)

// convWebhookBinary is the path of a build, or skips the test (fails it
// under CI=true) when hack/convwebhook.sh did not build it.
func convWebhookBinary(t *testing.T, build string) string {
	t.Helper()
	d := os.Getenv("CONVWEBHOOK_DIR")
	if d == "" {
		msg := "CONVWEBHOOK_DIR is not set: the folder of hack/convwebhook.sh's binaries (hack/test-e2e.sh sets it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	path := filepath.Join(d, build)
	_, err := os.Stat(path)
	require.NoErrorf(t, err, "build %s of the conversion webhook (hack/convwebhook.sh build)", build)
	return path
}

// startConvWebhook runs a build for the kind of n on a free loopback port
// with a fresh self-signed certificate, and stops it when the test ends.
func startConvWebhook(t *testing.T, build string, n names) *convWebhook {
	t.Helper()
	cert, err := webhooktest.WriteCert(t.TempDir())
	require.NoError(t, err)
	return startConvWebhookAt(t, build, n, "127.0.0.1:0", cert)
}

// freeLoopbackAddr returns 127.0.0.1:PORT with a port free a moment ago:
// for a webhook whose URL a CRD names before it runs.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startConvWebhookAt runs a build for the kind of n on addr with cert,
// waits until it serves, and stops it when the test ends.
func startConvWebhookAt(t *testing.T, build string, n names, addr string, cert webhooktest.Cert) *convWebhook {
	t.Helper()
	w, err := launchConvWebhook(convWebhookBinary(t, build), build, n, addr, cert)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := w.stop(); err != nil {
			t.Error(err)
		}
		t.Logf("conversion webhook (%s) log:\n%s", build, indent(w.log.String()))
	})
	return w
}

// launchConvWebhook runs the binary bin of a build for the kind of n on
// addr with cert and waits until it serves (30s at most); the caller stops
// it. It reports by its error, not through a test: a fake kubelet's hook
// calls it.
func launchConvWebhook(bin, build string, n names, addr string, cert webhooktest.Cert) (*convWebhook, error) {
	cmd := exec.Command(bin, "--listen", addr, "--tls-cert-file", cert.CertFile, "--tls-private-key-file", cert.KeyFile,
		"--group", group, "--kind", n.Kind)
	w := &convWebhook{build: build, CABundle: cert.PEM, cmd: cmd, log: &syncBuffer{}, done: make(chan error, 1)}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the conversion webhook (%s): %w", build, err)
	}
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = w.log.Write([]byte(line + "\n"))
			if m := convServingLine.FindStringSubmatch(line); m != nil {
				url <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		w.done <- cmd.Wait()
	}()
	select {
	case w.URL = <-url:
		return w, nil
	case err := <-w.done:
		w.once.Do(func() {})
		return nil, fmt.Errorf("the conversion webhook (%s) exited: %v\n%s", build, err, w.log.String())
	case <-time.After(30 * time.Second):
		_ = w.stop()
		return nil, fmt.Errorf("the conversion webhook (%s) did not start within 30s:\n%s", build, w.log.String())
	}
}

// stop ends the webhook with SIGTERM (once) and says how it ended.
func (w *convWebhook) stop() error {
	var err error
	w.once.Do(func() {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case werr := <-w.done:
			if werr != nil {
				err = fmt.Errorf("the conversion webhook (%s) did not stop cleanly: %w\n%s", w.build, werr, w.log.String())
			}
		case <-time.After(20 * time.Second):
			_ = w.cmd.Process.Kill()
			err = fmt.Errorf("the conversion webhook (%s) did not stop within 20s:\n%s", w.build, w.log.String())
		}
	})
	return err
}

// reviews returns the webhook's log line of each ConversionReview so far:
// "review UID: N objects (NAME at APIVERSION, ...) to APIVERSION: Success"
// (or ": Failure: MESSAGE").
func (w *convWebhook) reviews() []string {
	var out []string
	for _, line := range strings.Split(w.log.String(), "\n") {
		if strings.HasPrefix(line, "review ") {
			out = append(out, line)
		}
	}
	return out
}

// widgetNewCRD renders testdata/conversion/widget/new.yaml for n with the
// webhook at url with the CA caPEM.
func widgetNewCRD(t *testing.T, n names, url string, caPEM []byte) []byte {
	t.Helper()
	r := strings.NewReplacer("__URL__", url, "__CA_BUNDLE__", base64.StdEncoding.EncodeToString(caPEM))
	return []byte(r.Replace(string(n.render(t, "conversion/widget/new.yaml"))))
}

// widgetsAtV1 creates the old Widget CRD (testdata/conversion/widget/
// old.yaml) with kubectl apply and its objects at v1, and deletes the CRD
// when the test ends (deleteCRDAtCleanup).
func (e *env) widgetsAtV1(t *testing.T, n names) {
	t.Helper()
	_, err := e.kubectlApply(t, n.render(t, "conversion/widget/old.yaml"))
	if err == errNoKubectl {
		t.Skip("KUBECTL is not set: the path of a kubectl binary (hack/test-e2e.sh sets it to the cluster's version's kubectl)")
	}
	require.NoError(t, err)
	e.deleteCRDAtCleanup(t, n)
	e.waitEstablished(t, n.CRD)
	e.createCRs(t, n, "conversion/widget/objects.yaml")
}

// deployWidgetsAtV1 is widgetsAtV1 through kapp: app n.App deploys the
// old Widget CRD (deleted with the app at cleanup), then the Widgets of
// testdata/conversion/widget/objects.yaml are created at v1.
func (e *env) deployWidgetsAtV1(t *testing.T, n names) {
	t.Helper()
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{crdDir(t, n, "conversion/widget/old.yaml")})
	e.createCRs(t, n, "conversion/widget/objects.yaml")
}

// requireWidgetSpecsAtV1 requires every Widget, read at v1, to hold the
// spec it was created with; what says when ("unchanged", "after the
// migration to v2").
func (e *env) requireWidgetSpecsAtV1(t *testing.T, n names, what string) {
	t.Helper()
	for _, name := range widgetNames {
		spec, err := e.widgetSpec(t, n, "v1", name)
		require.NoError(t, err)
		require.Equalf(t, widgetSpecs[name], spec, "%s read at v1 %s", name, what)
	}
}

// deleteCRDAtCleanup deletes the CRD of n when the test ends, after
// conversionNoneAtCleanup.
func (e *env) deleteCRDAtCleanup(t *testing.T, n names) {
	t.Helper()
	t.Cleanup(func() {
		err := e.dyn.Resource(crdGVR).Delete(tctx(t), n.CRD, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting CRD %s: %v", n.CRD, err)
		}
	})
	e.conversionNoneAtCleanup(t, n)
}

// conversionNoneAtCleanup sets the CRD's conversion strategy to None when
// the test ends, before what was registered earlier (its deletion, kapp
// delete): the apiserver deletes a CRD's objects by listing them, which
// through a webhook that is stopped, or that cannot convert some of them,
// fails and leaves the CRD terminating. Under None every stored object
// reads at every version: it waits (30s at most) until a LIST works.
func (e *env) conversionNoneAtCleanup(t *testing.T, n names) {
	t.Helper()
	t.Cleanup(func() {
		crds := e.dyn.Resource(crdGVR)
		for attempt := 0; attempt < 5; attempt++ {
			crd, err := crds.Get(tctx(t), n.CRD, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return
			}
			require.NoError(t, err)
			if s, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); s != "Webhook" {
				return
			}
			require.NoError(t, unstructured.SetNestedMap(crd.Object, map[string]any{"strategy": "None"}, "spec", "conversion"))
			if _, err = crds.Update(tctx(t), crd, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
				require.NoError(t, err)
				break
			}
		}
		// Until the apiserver lists the objects again at every version (its
		// watch caches reinitialized), the deletion's LIST would fail and
		// back off.
		_, versions := e.liveVersions(t, n)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			listed := true
			for _, v := range versions {
				name, _ := v["name"].(string)
				if _, err := e.dyn.Resource(n.gvr(name)).List(tctx(t), metav1.ListOptions{}); err != nil {
					listed = false
				}
			}
			if listed {
				return
			}
		}
		t.Logf("cleanup: %s still not listed at every version 30s after conversion None", n.CRD)
	})
}

// widgetSpec returns the spec of a Widget read at version (GET).
func (e *env) widgetSpec(t *testing.T, n names, version, name string) (map[string]any, error) {
	t.Helper()
	obj, err := e.dyn.Resource(n.gvr(version)).Namespace("default").Get(tctx(t), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	return spec, nil
}

// applyWidgetCRD applies the new Widget CRD naming w with kubectl (no
// preflight, no kapp) and waits until v2 is served and the apiserver
// reads the objects at v2 through the webhook's build: a LIST at v2 that
// reaches the webhook, whether the build converts the objects or not.
func (e *env) applyWidgetCRD(t *testing.T, n names, w *convWebhook) {
	t.Helper()
	_, err := e.kubectlApply(t, widgetNewCRD(t, n, w.URL, w.CABundle))
	require.NoError(t, err)
	require.Eventuallyf(t, func() bool {
		crd := e.getCRD(t, n)
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if len(versions) != 2 {
			return false
		}
		err := e.listOnce(t, n, "v2")
		return (err == nil || !apierrors.IsNotFound(err)) && len(w.reviews()) > 0
	}, 30*time.Second, 200*time.Millisecond, "v2 of %s not served through the webhook within 30s", n.CRD)
}

// listOnce LISTs the Widgets of namespace default at version once: no
// retry, unlike client-go's clients, which retry a 429 ("storage is
// (re)initializing", what a watch cache answers while it cannot decode an
// object) ten times, about 40s.
func (e *env) listOnce(t *testing.T, n names, version string) error {
	t.Helper()
	return e.core.Discovery().RESTClient().Get().
		AbsPath("/apis", group, version, "namespaces", "default", n.Plural).
		MaxRetries(0).Do(tctx(t)).Error()
}

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The admission webhook under test runs as a child process
// (`kapp tools crd-upgrade-safety-webhook`) on loopback, with a certificate
// the test generates, under the read-only identity of
// examples/webhook/rbac.yaml. Each test registers it for its own CRD only
// (a ValidatingWebhookConfiguration with a url and a match condition on the
// CRD's name), so tests run in parallel without seeing each other's
// requests.

// examplesDir is the repository's examples folder.
const examplesDir = "../../examples"

// webhookNamespace and webhookServiceAccount are those of examples/webhook.
const (
	webhookNamespace      = "crd-upgrade-safety"
	webhookServiceAccount = "crd-upgrade-safety-webhook"
)

// webhookSkip is the reason to skip every webhook test, once a probe found
// that the apiserver does not call admission webhooks.
var (
	webhookSkipMu sync.Mutex
	webhookSkip   string
)

// syncBuffer is a bytes.Buffer safe for a child process writing and a test
// reading.
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

// webhookProc is a running webhook.
type webhookProc struct {
	cmd  *exec.Cmd
	addr string // host:port it serves on
	// metricsAddr is the host:port of its /metrics (plain HTTP).
	metricsAddr string
	cert        webhooktest.Cert
	log         *syncBuffer
	done        chan error
	once        sync.Once
}

func (p *webhookProc) url() string { return "https://" + p.addr + "/validate" }

// stop ends the webhook with SIGTERM, as the kubelet does.
func (p *webhookProc) stop(t *testing.T) {
	t.Helper()
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			require.NoErrorf(t, err, "the webhook did not stop cleanly:\n%s", p.log.String())
		case <-time.After(40 * time.Second):
			_ = p.cmd.Process.Kill()
			t.Errorf("the webhook did not stop within 40s:\n%s", p.log.String())
		}
	})
}

var (
	servingLine = regexp.MustCompile(`serving admission reviews on https://(\S+)/validate`)
	metricsLine = regexp.MustCompile(`serving metrics on http://(\S+)/metrics`)
	healthLine  = regexp.MustCompile(`serving probes on http://(\S+)/healthz`)
)

// metrics scrapes the webhook's /metrics.
func (p *webhookProc) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + p.metricsAddr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return string(data)
}

// startWebhook runs the webhook with the given settings file content ("":
// the defaults) under the identity of examples/webhook/rbac.yaml with the
// broad role of examples/webhook-broad-rbac (webhookKubeconfig), and stops
// it when the test ends.
func (e *env) startWebhook(t *testing.T, settings string) *webhookProc {
	t.Helper()
	return e.startWebhookAs(t, settings, e.webhookKubeconfig(t))
}

// startWebhookAs is startWebhook with the identity of a kubeconfig, and
// more flags of the command.
func (e *env) startWebhookAs(t *testing.T, settings, kubeconfig string, flags ...string) *webhookProc {
	t.Helper()
	dir := t.TempDir()
	cert, err := webhooktest.WriteCert(dir)
	require.NoError(t, err)
	args := []string{"tools", "crd-upgrade-safety-webhook", "--bind-address", "127.0.0.1", "--secure-port", "0",
		"--tls-cert-file", cert.CertFile, "--tls-private-key-file", cert.KeyFile, "--kubeconfig", kubeconfig,
		"--metrics-bind-address", "127.0.0.1:0"}
	args = append(args, flags...)
	if settings != "" {
		path := filepath.Join(dir, "settings.yaml")
		require.NoError(t, os.WriteFile(path, []byte(settings), 0o600))
		args = append(args, "--config", path)
	}
	cmd := exec.Command(e.kappBin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	p := &webhookProc{cmd: cmd, cert: cert, log: &syncBuffer{}, done: make(chan error, 1)}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = p.log
	require.NoError(t, cmd.Start())
	addr, metricsAddr := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.log.Write([]byte(line + "\n"))
			if m := servingLine.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
			if m := metricsLine.FindStringSubmatch(line); m != nil {
				metricsAddr <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		p.stop(t)
		t.Logf("webhook log:\n%s", indent(p.log.String()))
	})
	for p.addr == "" || p.metricsAddr == "" {
		select {
		case p.addr = <-addr:
		case p.metricsAddr = <-metricsAddr:
		case <-time.After(30 * time.Second):
			t.Fatalf("the webhook did not start within 30s:\n%s", p.log.String())
		}
	}
	return p
}

var (
	webhookIdentityOnce sync.Once
	webhookIdentityErr  error
)

// webhookKubeconfig returns a kubeconfig with a token of the webhook's
// ServiceAccount: the Namespace, ServiceAccount, ClusterRole and
// ClusterRoleBinding of examples/webhook are applied as they are, once per
// run, with the broad role of examples/webhook-broad-rbac: each test creates
// a CRD of its own, after any role generated by `... rbac` would have been
// (TestWebhookLeastPrivilege proves the least-privilege install).
func (e *env) webhookKubeconfig(t *testing.T) string {
	t.Helper()
	webhookIdentityOnce.Do(func() {
		var objs []*unstructured.Unstructured
		for _, f := range []string{"webhook/namespace.yaml", "webhook/rbac.yaml", "webhook-broad-rbac/rbac.yaml"} {
			objs = append(objs, readManifests(t, filepath.Join(examplesDir, f))...)
		}
		webhookIdentityErr = e.applyObjects(objs)
	})
	require.NoError(t, webhookIdentityErr, "applying examples/webhook's namespace and RBAC")
	return e.serviceAccountKubeconfig(t, webhookNamespace, webhookServiceAccount)
}

// serviceAccountKubeconfig returns a kubeconfig with a token of the
// ServiceAccount namespace/name (TokenRequest API, valid for an hour).
func (e *env) serviceAccountKubeconfig(t *testing.T, namespace, name string) string {
	t.Helper()
	tr, err := e.core.CoreV1().ServiceAccounts(namespace).CreateToken(tctx(t), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = e.rest.Host
	cluster.CertificateAuthorityData = e.rest.CAData
	if len(cluster.CertificateAuthorityData) == 0 && e.rest.CAFile != "" {
		cluster.CertificateAuthorityData, err = os.ReadFile(e.rest.CAFile)
		require.NoError(t, err)
	}
	cluster.InsecureSkipTLSVerify = e.rest.Insecure
	auth := clientcmdapi.NewAuthInfo()
	auth.Token = tr.Status.Token
	cfg.Clusters["e2e"], cfg.AuthInfos["webhook"] = cluster, auth
	cfg.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "webhook"}
	cfg.CurrentContext = "webhook"
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

func ptr[T any](v T) *T { return &v }

// readManifests decodes every document of a YAML file.
func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return yamlDocs(t, data)
}

// mapper maps kinds to resources through the apiserver's discovery.
func (e *env) mapper() (meta.RESTMapper, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(e.rest)
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), nil
}

// resourceFor is the client of obj's resource.
func (e *env) resourceFor(mapper meta.RESTMapper, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return e.dyn.Resource(m.Resource).Namespace(obj.GetNamespace()), nil
	}
	return e.dyn.Resource(m.Resource), nil
}

// applyObjects creates or updates objects with server-side apply.
func (e *env) applyObjects(objs []*unstructured.Unstructured) error {
	mapper, err := e.mapper()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, obj := range objs {
		ri, err := e.resourceFor(mapper, obj)
		if err != nil {
			return err
		}
		if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "e2e", Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// shippedWebhook is the webhook of examples/webhook/webhook.yaml.
func shippedWebhook(t *testing.T) admissionregistrationv1.ValidatingWebhook {
	t.Helper()
	objs := readManifests(t, filepath.Join(examplesDir, "webhook", "webhook.yaml"))
	require.Len(t, objs, 1)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, vwc))
	require.Len(t, vwc.Webhooks, 1)
	return vwc.Webhooks[0]
}

// registerWebhook registers url (with the CA caPEM) for the UPDATE and
// DELETE of n's CRD only, and removes it when the test ends, waiting until
// the apiserver no longer calls it for a delete of the CRD (so that the
// cleanup of the app can delete it).
func (e *env) registerWebhook(t *testing.T, n names, url string, caPEM []byte, policy admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	e.registerWebhookNamed(t, n, n.Singular+".webhook.e2e.example.com", url, caPEM, policy)
}

// registerWebhookNamed is registerWebhook with the webhook's name in its
// configuration (kube.AdmissionWebhookName: as the shipped manifests name it,
// which a kapp deploy's preflight looks for).
func (e *env) registerWebhookNamed(t *testing.T, n names, name, url string, caPEM []byte, policy admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	none := admissionregistrationv1.SideEffectClassNone
	shipped := shippedWebhook(t)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + n.Singular},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			// The shipped rules and match conditions (status writes only
			// when status.storedVersions shrinks), for this test's CRD only.
			Rules: shipped.Rules,
			MatchConditions: append(shipped.MatchConditions, admissionregistrationv1.MatchCondition{
				Name: "this-test", Expression: fmt.Sprintf("request.name == %q", n.CRD),
			}),
			FailurePolicy:           &policy,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr(int32(15)),
		}},
	}
	_, err := e.core.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(tctx(t), vwc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		err := e.core.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), vwc.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the webhook configuration: %v", err)
			return
		}
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			err := e.dyn.Resource(crdGVR).Delete(context.Background(), n.CRD, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil || apierrors.IsNotFound(err) {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("the apiserver still calls the removed webhook for CRD %s", n.CRD)
	})
}

// requireWebhookCalled waits until the apiserver calls the webhook p for
// n's CRD (a server-side dry run of a label change, which the webhook
// judges "spec unchanged" and logs), and skips the test when it never does:
// an apiserver without the ValidatingAdmissionWebhook admission plugin
// never calls webhooks.
func (e *env) requireWebhookCalled(t *testing.T, n names, p *webhookProc) {
	t.Helper()
	webhookSkipMu.Lock()
	skip := webhookSkip
	webhookSkipMu.Unlock()
	if skip != "" {
		t.Skip(skip)
	}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		crd := e.getCRD(t, n)
		require.NotNil(t, crd)
		labels := crd.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["e2e-probe"] = fmt.Sprint(i)
		crd.SetLabels(labels)
		_, err := e.dyn.Resource(crdGVR).Update(tctx(t), crd, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && !apierrors.IsConflict(err) {
			require.NoError(t, err)
		}
		if strings.Contains(p.log.String(), "crd="+n.CRD+" ") {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	msg := "the apiserver does not call validating admission webhooks (a ValidatingWebhookConfiguration for CRD " + n.CRD +
		" was not honoured within 20s): start kube-apiserver with ValidatingAdmissionWebhook among --enable-admission-plugins"
	webhookSkipMu.Lock()
	webhookSkip = msg
	webhookSkipMu.Unlock()
	t.Skip(msg)
}

// webhookApp is a test's app with the base CRD and its custom resources,
// and the webhook with the given settings registered for its CRD.
func webhookApp(t *testing.T, settings string) (*env, names, *webhookProc) {
	t.Helper()
	e, n := baseApp(t)
	p := e.startWebhook(t, settings)
	e.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
	e.requireWebhookCalled(t, n, p)
	return e, n, p
}

// warningCollector keeps the warnings of the requests of one client.
type warningCollector struct {
	mu    sync.Mutex
	texts []string
}

func (w *warningCollector) HandleWarningHeader(code int, _ string, text string) {
	if code == 299 {
		w.mu.Lock()
		w.texts = append(w.texts, text)
		w.mu.Unlock()
	}
}

// updateCRD updates n's CRD to a rendered template (the live object's
// resourceVersion and labels kept), as another writer than kapp would, with
// the given extra annotations; it returns the apiserver's warnings and its
// error.
func (e *env) updateCRD(t *testing.T, n names, template string, dryRun bool, annotations map[string]string) ([]string, error) {
	t.Helper()
	live := e.getCRD(t, n)
	require.NotNil(t, live)
	objs := yamlDocs(t, n.render(t, template))
	require.Len(t, objs, 1)
	obj := objs[0]
	obj.SetResourceVersion(live.GetResourceVersion())
	obj.SetLabels(live.GetLabels())
	ann := live.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for k, v := range annotations {
		ann[k] = v
	}
	obj.SetAnnotations(ann)
	w := &warningCollector{}
	dyn := e.dynWithWarnings(t, w)
	opts := metav1.UpdateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := dyn.Resource(crdGVR).Update(tctx(t), obj, opts)
	return w.texts, err
}

// dynWithWarnings is a dynamic client whose requests' warnings go to w.
func (e *env) dynWithWarnings(t *testing.T, w *warningCollector) dynamic.Interface {
	t.Helper()
	cfg := rest.CopyConfig(e.rest)
	cfg.WarningHandler = w
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return dyn
}

// annotateCRD merges annotations into n's live CRD (a metadata-only change).
func (e *env) annotateCRD(t *testing.T, n names, annotations map[string]string) {
	t.Helper()
	patch := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	data, err := json.Marshal(patch)
	require.NoError(t, err)
	_, err = e.dyn.Resource(crdGVR).Patch(tctx(t), n.CRD, types.MergePatchType, data, metav1.PatchOptions{})
	require.NoError(t, err)
}

// deleteObjects deletes objects (already gone is fine).
func (e *env) deleteObjects(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	mapper, err := e.mapper()
	require.NoError(t, err)
	for _, obj := range objs {
		ri, err := e.resourceFor(mapper, obj)
		require.NoError(t, err)
		if err := ri.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// labelCRD sets a label on n's live CRD.
func (e *env) labelCRD(t *testing.T, n names, key, value string) {
	t.Helper()
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: value}}})
	require.NoError(t, err)
	_, err = e.dyn.Resource(crdGVR).Patch(tctx(t), n.CRD, types.MergePatchType, data, metav1.PatchOptions{})
	require.NoError(t, err)
}

// impersonating is a dynamic client acting as the given user and groups.
func (e *env) impersonating(t *testing.T, user string, groups ...string) dynamic.Interface {
	t.Helper()
	cfg := rest.CopyConfig(e.rest)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string{"system:authenticated"}, groups...)}
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return dyn
}

// waitEstablished waits until the CRD of that name is established.
func (e *env) waitEstablished(t *testing.T, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		crd, err := e.dyn.Resource(crdGVR).Get(tctx(t), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "CRD %s not established", name)
}

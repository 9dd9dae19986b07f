package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"
)

// The installs users use, on the test cluster (issue 32 item 4). The
// clusters run no Pods (no scheduler, no kubelet): the installs' servers
// never start. The tests stand in for the kubelet (standInForKubelet) and
// run the webhook server itself on loopback as the other webhook tests do
// (startWebhook), pointing the installed registration at it with the
// webhook.url value and scoping it to the test's CRD with
// webhook.objectSelector, so that tests running in parallel never see it.

// installSelectorLabel labels the CRD an installed registration judges.
const installSelectorLabel = "e2e.crd-upgrade-safety.kapp.k14s.io/install"

// standInForKubelet marks every Pod of namespace ns Running and Ready, as
// the kubelet does once a pod's containers pass their readiness probes,
// until the test ends: the ReplicaSet and Deployment controllers then
// count the replicas available, and kapp and Helm, which wait for the
// Deployment, go on. It stands in for the kubelet only: no container runs
// (the server the registration calls is the test's, on loopback).
func (e *env) standInForKubelet(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			pods, err := e.core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for i := range pods.Items {
					pod := &pods.Items[i]
					if pod.DeletionTimestamp != nil || podReady(pod) {
						continue
					}
					now := metav1.Now()
					pod.Status.Phase = corev1.PodRunning
					pod.Status.StartTime = &now
					pod.Status.Conditions = []corev1.PodCondition{
						{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
						{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
						{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
						{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
					}
					var statuses []corev1.ContainerStatus
					for _, c := range pod.Spec.Containers {
						statuses = append(statuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true, Started: ptr(true),
							State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
					}
					pod.Status.ContainerStatuses = statuses
					if _, err := e.core.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
						t.Logf("standing in for the kubelet: pod %s/%s: %v", ns, pod.Name, err)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pkgRegistry is the in-memory OCI registry of `release-image registry` on
// loopback.
type pkgRegistry struct {
	tool, host string
}

var registryLine = regexp.MustCompile(`serving an OCI registry on (\S+)`)

// startRegistry runs the registry of $PKGREPO_TOOL (hack/pkgrepo.sh) on
// loopback until the test ends; the test skips without it (fails under
// CI=true).
func startRegistry(t *testing.T) pkgRegistry {
	t.Helper()
	tool := os.Getenv("PKGREPO_TOOL")
	if tool == "" {
		msg := "PKGREPO_TOOL is not set: the registry tool (hack/pkgrepo.sh builds it, hack/test-e2e.sh sets it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := exec.Command(tool, "registry", "-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	log := &syncBuffer{}
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := registryLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	select {
	case a := <-addr:
		return pkgRegistry{tool: tool, host: a}
	case err := <-done:
		t.Fatalf("the registry exited: %v\n%s", err, log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the registry did not start within 30s\n%s", log.String())
	}
	return pkgRegistry{}
}

// run runs the tool with args and returns its standard output.
func (r pkgRegistry) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(r.tool, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.Dir = "../.." // -package-dir is relative to the repository
	out, err := cmd.Output()
	require.NoErrorf(t, err, "release-image %s:\n%s", strings.Join(args, " "), stderr.String())
	return string(out)
}

// installValues is the values both installs get in the tests: the
// certificate of the loopback server (given: the Secret created), the
// registration calling it at its URL for the CRDs labelled
// installSelectorLabel=selector, its own namespace and names (the other
// webhook tests use examples/webhook's), and the settings.
func installValues(p *webhookProc, ns, selector, mode string) map[string]any {
	return map[string]any{
		"namePrefix": ns,
		"settings":   map[string]any{"mode": mode},
		"tls": map[string]any{
			"source": "provided", "caBundle": string(p.cert.PEM), "cert": string(p.cert.PEM), "key": mustRead(p.cert.KeyFile),
		},
		"webhook": map[string]any{
			"url":            p.url(),
			"objectSelector": map[string]any{"matchLabels": map[string]any{installSelectorLabel: selector}},
		},
	}
}

func mustRead(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// settingsOf is the settings file of the installed ConfigMap (kapp's
// versioned name has a suffix: the newest by name).
func (e *env) settingsOf(t *testing.T, ns string) map[string]any {
	t.Helper()
	cms, err := e.core.CoreV1().ConfigMaps(ns).List(tctx(t), metav1.ListOptions{})
	require.NoError(t, err)
	var found *corev1.ConfigMap
	for i := range cms.Items {
		cm := &cms.Items[i]
		if _, ok := cm.Data["settings.yaml"]; ok && (found == nil || cm.Name > found.Name) {
			found = cm
		}
	}
	require.NotNilf(t, found, "no settings ConfigMap in namespace %s", ns)
	var s map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(found.Data["settings.yaml"]), &s))
	return s
}

// registration is the installed ValidatingWebhookConfiguration of that
// name, or nil.
func (e *env) registration(t *testing.T, name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	vwc, err := e.core.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(tctx(t), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return vwc
}

// deleteRegistrationOnFailure removes the registration of that name when
// the test ends, should the uninstall under test have left it: a
// registration without a server would fail every later write of the test's
// CRD.
func (e *env) deleteRegistrationOnFailure(t *testing.T, name string) {
	t.Cleanup(func() {
		err := e.core.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err == nil {
			t.Logf("cleanup: deleted the registration %s the uninstall left", name)
		}
	})
}

// requireInstalledWebhookJudges proves the installed registration calls
// the loopback server for n's CRD: an unsafe update denied with its
// findings (nothing changed), a safe one applied.
func (e *env) requireInstalledWebhookJudges(t *testing.T, n names, p *webhookProc) {
	t.Helper()
	e.requireWebhookCalled(t, n, p)
	before := e.snapshot(t, n)
	_, err := e.updateCRD(t, n, "unsafe/enum-value-removed/new.yaml", false, nil)
	require.Error(t, err, "the installed webhook let an unsafe update through")
	require.Truef(t, apierrors.IsForbidden(err), "%v", err)
	require.Contains(t, err.Error(), webhookDenial+n.CRD+": 1 error finding:")
	requireFinding(t, err.Error(), "enum", n.CRD, "v1", "^.spec.color")
	e.requireUnchanged(t, n, before)
	warnings, err := e.updateCRD(t, n, "safe/new.yaml", false, nil)
	require.NoError(t, err, "the installed webhook refused a safe update")
	require.Empty(t, warnings)
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), "priority")
}

// waitReconciled waits until kapp-controller has reconciled a
// PackageRepository or PackageInstall (the conditions of an App) and
// requires the condition.
func (k *kcEnv) waitReconciled(t *testing.T, gvr schema.GroupVersionResource, ns, name, condition string) appStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcReconcileTimeout)
	defer cancel()
	start := time.Now()
	var last *unstructured.Unstructured
	for {
		obj, err := k.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = obj
			if st, ok := reconciledStatus(obj); ok && !(st.Condition == kcConditionFailed && strings.Contains(st.UsefulErrorMessage, kcReaperRace)) {
				t.Logf("%s %s/%s: %s after %s", gvr.Resource, ns, name, st.Condition, time.Since(start).Round(100*time.Millisecond))
				require.Equalf(t, condition, st.Condition, "%s %s/%s; status:\n%s%s", gvr.Resource, ns, name, st, k.logTail(name))
				return st
			}
		}
		select {
		case <-ctx.Done():
			var status any
			if last != nil {
				status = last.Object["status"]
			}
			y, _ := yaml.Marshal(status)
			t.Fatalf("%s %s/%s was not reconciled within %s; status:\n%s%s", gvr.Resource, ns, name, kcReconcileTimeout, y, k.logTail(name))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// requireRemovedInOrder runs uninstall of the webhook installed in ns
// (registration ns, Deployment ns-webhook, by what: "release",
// "PackageInstall") and requires that the registration was deleted before
// the server and that neither outlived what installed them.
func (e *env) requireRemovedInOrder(t *testing.T, ns, what string, uninstall func()) {
	t.Helper()
	order := e.deletionOrder(t, ns, ns, ns+"-webhook")
	uninstall()
	first, seen := order()
	t.Log(seen)
	require.Truef(t, first, "the registration was not deleted before the server: %s", seen)
	require.Nil(t, e.registration(t, ns), "the registration outlived the "+what)
	_, err := e.core.AppsV1().Deployments(ns).Get(tctx(t), ns+"-webhook", metav1.GetOptions{})
	require.Truef(t, apierrors.IsNotFound(err), "the Deployment outlived the %s: %v", what, err)
}

// deletionOrder watches, from now on, the registration of that name and
// the Deployment ns/deployment, and when stop is called returns whether
// the registration was deleted before the Deployment began to be deleted
// (the guarantee: never a registration without a server behind it),
// saying what it saw. The order is the order of the writes in etcd: the
// resourceVersions of the two watch events (one etcd, one revision
// counter; opaque to clients in general, an order here).
func (e *env) deletionOrder(t *testing.T, registration, ns, deployment string) (stop func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	regs, err := e.core.AdmissionregistrationV1().ValidatingWebhookConfigurations().Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + registration})
	require.NoError(t, err)
	deps, err := e.core.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + deployment})
	require.NoError(t, err)
	var regGone, depDeleting uint64
	rv := func(obj any) uint64 {
		m, err := meta.Accessor(obj)
		if err != nil {
			return 0
		}
		n, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
		return n
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for regGone == 0 || depDeleting == 0 {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-regs.ResultChan():
				if !ok {
					return
				}
				if ev.Type == watch.Deleted && regGone == 0 {
					regGone = rv(ev.Object)
				}
			case ev, ok := <-deps.ResultChan():
				if !ok {
					return
				}
				m, err := meta.Accessor(ev.Object)
				if err == nil && depDeleting == 0 && (ev.Type == watch.Deleted || m.GetDeletionTimestamp() != nil) {
					depDeleting = rv(ev.Object)
				}
			}
		}
	}()
	return func() (bool, string) {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
		cancel()
		<-done
		regs.Stop()
		deps.Stop()
		what := fmt.Sprintf("registration deleted at resourceVersion %d, Deployment's deletion at %d", regGone, depDeleting)
		return regGone != 0 && depDeleting != 0 && regGone < depDeleting, what
	}
}

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

// The kapp-controller tests need the controller of hack/kapp-controller.sh
// running against the cluster; hack/test-e2e.sh --kapp-controller starts it
// and sets:
//
//	KAPPCTRL_E2E_LOGS            the directory of its logs (shown when a test fails)
//	KAPPCTRL_E2E_SAFETY_CONFIG   the file it was given as KAPP_CRD_UPGRADE_SAFETY_CONFIG
//	KAPPCTRL_E2E_YTT             the ytt it runs
//	KAPPCTRL_E2E_RELEASE_CONFIG  config/ of the kapp-controller module: its release templates
const (
	kcLogsVar            = "KAPPCTRL_E2E_LOGS"
	kcSafetyConfigVar    = "KAPPCTRL_E2E_SAFETY_CONFIG"
	kcYttVar             = "KAPPCTRL_E2E_YTT"
	kcReleaseConfigVar   = "KAPPCTRL_E2E_RELEASE_CONFIG"
	kcNamespace          = "default"
	kcServiceAccount     = "kappctrl-e2e"
	kcReconcileTimeout   = 2 * time.Minute
	kcConditionSucceeded = "ReconcileSucceeded"
	kcConditionFailed    = "ReconcileFailed"
)

var appGVR = schema.GroupVersionResource{Group: "kappctrl.k14s.io", Version: "v1alpha1", Resource: "apps"}

// kcEnv is the cluster with kapp-controller running.
type kcEnv struct {
	*env
	logs string
}

var (
	kcOnce sync.Once
	kcErr  error
)

// kcSetup returns the env of a kapp-controller test. Without the
// controller the test skips, or fails under CI=true.
func kcSetup(t *testing.T) *kcEnv {
	t.Helper()
	e := setup(t)
	logs := os.Getenv(kcLogsVar)
	if logs == "" {
		msg := kcLogsVar + " is not set: kapp-controller is not running (run hack/test-e2e.sh --kapp-controller)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	kcOnce.Do(func() { kcErr = e.createDeployer() })
	require.NoError(t, kcErr)
	return &kcEnv{env: e, logs: logs}
}

// createDeployer creates the service account the test Apps deploy with:
// cluster-admin, as their manifests hold CRDs.
func (e *env) createDeployer() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: kcServiceAccount, Namespace: kcNamespace}}
	if _, err := e.core.CoreV1().ServiceAccounts(kcNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating service account %s: %w", kcServiceAccount, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kcServiceAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: kcServiceAccount, Namespace: kcNamespace}},
	}
	if _, err := e.core.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating cluster role binding %s: %w", kcServiceAccount, err)
	}
	return nil
}

// newApp returns an App named n.App that fetches files inline (path ->
// content), templates them with ytt and deploys them with kapp.
func newApp(n names, files map[string][]byte) *unstructured.Unstructured {
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kappctrl.k14s.io/v1alpha1",
		"kind":       "App",
		"metadata":   map[string]any{"name": n.App, "namespace": kcNamespace},
		"spec": map[string]any{
			"serviceAccountName": kcServiceAccount,
			// Written like this: "10m" would be rewritten by the controller.
			"syncPeriod": "10m0s",
			"template":   []any{map[string]any{"ytt": map[string]any{}}},
			"deploy":     []any{map[string]any{"kapp": map[string]any{}}},
		},
	}}
	setInline(app, files)
	return app
}

func setInline(app *unstructured.Unstructured, files map[string][]byte) {
	paths := map[string]any{}
	for name, data := range files {
		paths[name] = string(data)
	}
	_ = unstructured.SetNestedSlice(app.Object, []any{map[string]any{"inline": map[string]any{"paths": paths}}}, "spec", "fetch")
}

// createApp creates the App and deletes it when the test ends, waiting
// until kapp-controller has deleted what it deployed (while the controller
// still runs: it removes its finalizer).
func (k *kcEnv) createApp(t *testing.T, app *unstructured.Unstructured) {
	t.Helper()
	_, err := k.dyn.Resource(appGVR).Namespace(app.GetNamespace()).Create(tctx(t), app, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { k.deleteApp(t, app.GetNamespace(), app.GetName()) })
}

func (k *kcEnv) deleteApp(t *testing.T, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcReconcileTimeout)
	defer cancel()
	err := k.dyn.Resource(appGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("cleanup: deleting App %s/%s: %v", ns, name, err)
		return
	}
	for {
		_, err := k.dyn.Resource(appGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("cleanup: App %s/%s still exists %s after its deletion (kapp-controller did not finalize it)%s",
				ns, name, kcReconcileTimeout, k.diagnostics(t, ns, name))
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// updateApp replaces the App's inline files.
func (k *kcEnv) updateApp(t *testing.T, ns, name string, files map[string][]byte) {
	t.Helper()
	ri := k.dyn.Resource(appGVR).Namespace(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app, err := ri.Get(tctx(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		setInline(app, files)
		_, err = ri.Update(tctx(t), app, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)
}

// appStatus is what a test reads of an App's status.
type appStatus struct {
	Condition          string // ReconcileSucceeded or ReconcileFailed
	UsefulErrorMessage string
	FriendlyDesc       string
	DeployStdout       string
	DeployStderr       string
	DeployError        string
	raw                map[string]any
}

// kcReaperRace is the error of a template step whose child process
// kapp-controller's zombie reaper (cmd/controller/sidecarexec.go in
// kapp-controller v0.51.0) collected before exec could.
const kcReaperRace = "waitid: no child processes"

// waitApp waits until kapp-controller has reconciled the App's current
// generation (status.observedGeneration == metadata.generation and a
// ReconcileSucceeded or ReconcileFailed condition) and returns its status.
func (k *kcEnv) waitApp(t *testing.T, ns, name string) appStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcReconcileTimeout)
	defer cancel()
	start := time.Now()
	for {
		app, err := k.dyn.Resource(appGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			st, ok := reconciledStatus(app)
			switch {
			case ok && st.Condition == kcConditionFailed && strings.Contains(st.UsefulErrorMessage, kcReaperRace):
				// Not an outcome: kapp-controller's sidecar reaps every
				// child (Wait4(-1)) and can take ytt's exit from the
				// template step; kapp-controller reconciles the App again.
				t.Logf("App %s/%s: kapp-controller's own exec race (%s), waiting for its next reconcile", ns, name, st.UsefulErrorMessage)
			case ok:
				t.Logf("App %s/%s: %s after %s", ns, name, st.Condition, time.Since(start).Round(100*time.Millisecond))
				return st
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("App %s/%s was not reconciled within %s (last error: %v)%s", ns, name, kcReconcileTimeout, err, k.diagnostics(t, ns, name))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func reconciledStatus(app *unstructured.Unstructured) (appStatus, bool) {
	observed, _, _ := unstructured.NestedInt64(app.Object, "status", "observedGeneration")
	if observed != app.GetGeneration() {
		return appStatus{}, false
	}
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	st := appStatus{}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if t, _ := m["type"].(string); m["status"] == "True" && (t == kcConditionSucceeded || t == kcConditionFailed) {
			st.Condition = t
		}
	}
	if st.Condition == "" {
		return appStatus{}, false
	}
	str := func(path ...string) string {
		s, _, _ := unstructured.NestedString(app.Object, append([]string{"status"}, path...)...)
		return s
	}
	st.UsefulErrorMessage = str("usefulErrorMessage")
	st.FriendlyDesc = str("friendlyDescription")
	st.DeployStdout = str("deploy", "stdout")
	st.DeployStderr = str("deploy", "stderr")
	st.DeployError = str("deploy", "error")
	st.raw, _, _ = unstructured.NestedMap(app.Object, "status")
	return st, true
}

func (s appStatus) String() string {
	b, err := yaml.Marshal(s.raw)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// requireReconciled waits for the App and requires the given condition.
func (k *kcEnv) requireReconciled(t *testing.T, ns, name, condition string) appStatus {
	t.Helper()
	st := k.waitApp(t, ns, name)
	require.Equalf(t, condition, st.Condition, "App %s/%s: unexpected outcome; status:\n%s%s", ns, name, st, k.logTail(name))
	return st
}

// diagnostics is the App's status and the controller's log lines about it.
func (k *kcEnv) diagnostics(t *testing.T, ns, name string) string {
	t.Helper()
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if app, err := k.dyn.Resource(appGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		st, _, _ := unstructured.NestedMap(app.Object, "status")
		y, _ := yaml.Marshal(map[string]any{"generation": app.GetGeneration(), "status": st})
		fmt.Fprintf(&b, "\n--- App %s/%s ---\n%s", ns, name, y)
	}
	b.WriteString(k.logTail(name))
	return b.String()
}

// logTail returns the last controller log lines that name the App, and the
// last lines of both logs: the controller runs the tests' Apps in parallel.
func (k *kcEnv) logTail(name string) string {
	var b strings.Builder
	for _, f := range []struct {
		file, filter string
		n            int
	}{
		{"controller.log", `"name":"` + name + `"`, 30},
		{"controller.log", "", 15},
		{"sidecar.log", "", 10},
	} {
		path := filepath.Join(k.logs, f.file)
		lines, err := tailLines(path, f.filter, f.n)
		if err != nil {
			fmt.Fprintf(&b, "\n--- %s: %v", path, err)
			continue
		}
		what := "last lines"
		if f.filter != "" {
			what = "last lines about App " + name
		}
		fmt.Fprintf(&b, "\n--- %s of %s ---\n%s", what, path, strings.Join(lines, "\n"))
	}
	return b.String()
}

func tailLines(path, filter string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if filter == "" || strings.Contains(sc.Text(), filter) {
			lines = append(lines, sc.Text())
			if len(lines) > n {
				lines = lines[1:]
			}
		}
	}
	return lines, sc.Err()
}

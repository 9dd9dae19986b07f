package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kapp-controller running upstream kapp, held to the check by the webhook
// (issue 25 item 6). hack/test-e2e.sh --kapp-controller runs a second
// kapp-controller (hack/kapp-controller.sh with KAPPCTRL_KAPP, its own
// KAPPCTRL_STATE_DIR) whose PATH has upstream kapp v0.66.0, built from the
// module without our preflight, and which reconciles the Apps of one
// namespace only; the first controller (our kapp) reconciles those of
// namespace default only, so the two never see the same App. It sets:
//
//	KAPPCTRL_E2E_UPSTREAM_LOGS       the directory of the second controller's logs
//	KAPPCTRL_E2E_UPSTREAM_KAPP       the kapp it runs
//	KAPPCTRL_E2E_UPSTREAM_NAMESPACE  the namespace whose Apps it reconciles
//	KAPPCTRL_E2E_NAMESPACE           the namespace of the first controller ("": every one)
const (
	kcUpstreamLogsVar      = "KAPPCTRL_E2E_UPSTREAM_LOGS"
	kcUpstreamKappVar      = "KAPPCTRL_E2E_UPSTREAM_KAPP"
	kcUpstreamNamespaceVar = "KAPPCTRL_E2E_UPSTREAM_NAMESPACE"
	kcNamespaceVar         = "KAPPCTRL_E2E_NAMESPACE"
)

// upstreamKCEnv is the cluster with the kapp-controller that runs upstream kapp.
type upstreamKCEnv struct {
	*kcEnv
	ns string // the namespace of its Apps
}

var (
	upstreamKCOnce sync.Once
	upstreamKCErr  error
)

// upstreamKCSetup returns the env of a test of the kapp-controller that runs
// upstream kapp. Without that controller the test skips, or fails under
// CI=true.
func upstreamKCSetup(t *testing.T) *upstreamKCEnv {
	t.Helper()
	e := setup(t)
	logs := os.Getenv(kcUpstreamLogsVar)
	if logs == "" {
		msg := kcUpstreamLogsVar + " is not set: the kapp-controller with upstream kapp is not running (run hack/test-e2e.sh --kapp-controller)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ns, kapp := os.Getenv(kcUpstreamNamespaceVar), os.Getenv(kcUpstreamKappVar)
	require.NotEmptyf(t, ns, "%s is not set: the controller must reconcile the Apps of one namespace only", kcUpstreamNamespaceVar)
	require.NotEmptyf(t, kapp, "%s is not set", kcUpstreamKappVar)
	if os.Getenv(kcLogsVar) != "" {
		other := os.Getenv(kcNamespaceVar)
		require.Truef(t, other != "" && other != ns,
			"the kapp-controller with our kapp reconciles the Apps of %q (\"\": every namespace), and so those of %s too: the two controllers would fight over the test's App",
			other, ns)
	}
	upstreamKCOnce.Do(func() { upstreamKCErr = e.createNamespacedDeployer(ns) })
	require.NoError(t, upstreamKCErr)
	requireUpstreamKapp(t, kapp)
	return &upstreamKCEnv{kcEnv: &kcEnv{env: e, logs: logs}, ns: ns}
}

// requireUpstreamKapp asserts that kapp is upstream's own binary: its
// version names no crd-upgrade-safety of ours, and its tools are upstream's
// only.
func requireUpstreamKapp(t *testing.T, kapp string) {
	t.Helper()
	version, err := exec.Command(kapp, "version").CombinedOutput()
	require.NoErrorf(t, err, "%s version:\n%s", kapp, version)
	require.NotContainsf(t, string(version), "crd-upgrade-safety", "%s is this distribution's kapp, not upstream's:\n%s", kapp, version)
	tools, err := exec.Command(kapp, "tools", "--help").CombinedOutput()
	require.NoErrorf(t, err, "%s tools --help:\n%s", kapp, tools)
	require.NotContainsf(t, string(tools), "crd-upgrade-safety", "%s has tools of ours: not upstream kapp\n%s", kapp, tools)
	t.Logf("the controller runs %s: %s", kapp, strings.TrimSpace(string(version)))
}

// createNamespacedDeployer creates the service account of the test Apps in
// ns: cluster-admin, as their manifests hold CRDs (createDeployer does it
// for namespace default).
func (e *env) createNamespacedDeployer(ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: kcServiceAccount, Namespace: ns}}
	if _, err := e.core.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating service account %s/%s: %w", ns, kcServiceAccount, err)
	}
	name := kcServiceAccount + "-" + ns
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: kcServiceAccount, Namespace: ns}},
	}
	if _, err := e.core.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating cluster role binding %s: %w", name, err)
	}
	return nil
}

// TestWebhookBlocksUpstreamKappController: kapp-controller running upstream
// kapp v0.66.0 (no preflight of ours, no settings file) is held to the
// check by the webhook. An App whose fetched manifests carry an unsafe
// update of its CRD fails to reconcile with the webhook's denial and its
// findings in the App's status, and the CRD and its custom resources stay
// as they were; the App then recovers with a safe update, which is applied.
func TestWebhookBlocksUpstreamKappController(t *testing.T) {
	t.Parallel()
	k := upstreamKCSetup(t)
	n := newNames(t)
	app := newApp(n, appFiles(t, n, "base/crd.yaml", nil))
	app.SetNamespace(k.ns)
	k.createApp(t, app)
	k.requireReconciled(t, k.ns, n.App, kcConditionSucceeded)

	// Registered after the App's creation: removed before its deletion
	// (cleanups run last first), which deletes the CRD and its custom
	// resources.
	p := k.startWebhook(t, "")
	k.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
	k.requireWebhookCalled(t, n, p)
	before := k.snapshot(t, n)
	require.Len(t, before.CRs, 2, "the App's custom resources")

	k.updateApp(t, k.ns, n.App, appFiles(t, n, "unsafe/enum-value-removed/new.yaml", nil))
	st := k.requireReconciled(t, k.ns, n.App, kcConditionFailed)
	for field, text := range map[string]string{
		"status.usefulErrorMessage": st.UsefulErrorMessage,
		"status.deploy.stderr":      st.DeployStderr,
	} {
		// kapp may break the line before the webhook's message.
		require.Containsf(t, text, "CRDUpgradeSafety denied the update of CRD "+n.CRD,
			"%s does not carry the webhook's denial; status:\n%s%s", field, st, k.logTail(n.App))
		line, ok := findingLine(text, "enum", n.CRD, "v1", "^.spec.color", `["green"]`)
		require.Truef(t, ok, "%s names no enum finding; status:\n%s", field, st)
		t.Logf("%s: %s", field, strings.TrimSpace(line))
		require.NotContainsf(t, text, blockedError, "%s: a preflight blocked the deploy, not the webhook", field)
	}
	require.Contains(t, st.FriendlyDesc, "Reconcile failed")
	t.Logf("status of the blocked App:\n%s", indent(st.String()))
	// The request the webhook denied is the update of the controller's
	// kapp, made as the App's service account.
	denied := fmt.Sprintf(`op=UPDATE crd=%s user="system:serviceaccount:%s:%s" dryRun=false allowed=false`, n.CRD, k.ns, kcServiceAccount)
	require.Containsf(t, p.log.String(), denied, "the webhook did not deny the update of the App's deploy; its log:\n%s", p.log.String())
	k.requireUnchanged(t, n, before)

	k.updateApp(t, k.ns, n.App, appFiles(t, n, "safe/new.yaml", nil))
	k.requireReconciled(t, k.ns, n.App, kcConditionSucceeded)
	require.Contains(t, k.crdSchemaJSON(t, n, "v1"), "priority", "the safe update was not applied")
	require.Len(t, k.snapshot(t, n).CRs, 2)
}

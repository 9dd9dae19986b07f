package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TestWebhookLeastPrivilege (issue 32 item 2): the webhook runs as a
// ServiceAccount of the least-privilege install (examples/webhook/rbac.yaml,
// in a namespace of its own) plus the role `kapp tools
// crd-upgrade-safety-webhook rbac` prints for the cluster's CRDs, applied
// with kapp as docs/webhook.md says. The service account may not list
// Secrets or ConfigMaps; it may list the custom resources of the CRDs the
// role was generated for. A CRD of a group created after the role is
// judged with a denial naming the missing rule and the command; once the
// role is generated and applied again, the same update goes through.
func TestWebhookLeastPrivilege(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	ns := "crd-upgrade-safety-" + n.Singular
	sa := webhookServiceAccount
	subject := "system:serviceaccount:" + ns + ":" + sa

	// The install's namespace, service account and role, in ns: the
	// cluster-scoped names get the test's suffix.
	var install []*unstructured.Unstructured
	for _, obj := range readManifests(t, filepath.Join(examplesDir, "webhook", "rbac.yaml")) {
		switch obj.GetKind() {
		case "ServiceAccount":
			obj.SetNamespace(ns)
		case "ClusterRole":
			obj.SetName(obj.GetName() + "-" + n.Singular)
		case "ClusterRoleBinding":
			obj.SetName(obj.GetName() + "-" + n.Singular)
			require.NoError(t, unstructured.SetNestedField(obj.Object, obj.GetName(), "roleRef", "name"))
			require.NoError(t, unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": ns}}, "subjects"))
		}
		install = append(install, obj)
	}
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	install = append([]*unstructured.Unstructured{nsObj}, install...)
	require.NoError(t, e.applyObjects(install))
	t.Cleanup(func() {
		for i := len(install) - 1; i >= 0; i-- {
			if install[i].GetKind() != "ServiceAccount" { // goes with the namespace
				e.deleteObjects(t, install[i])
			}
		}
	})

	// The generated role, for the CRDs of the cluster now, applied as its
	// own kapp app.
	rbacApp := "e2e-rbac-" + n.Singular
	roleName := "crd-upgrade-safety-webhook-crs-" + n.Singular
	e.cleanupApp(t, rbacApp)
	applyRole := func(extra ...string) {
		t.Helper()
		r := e.kapp(t, "", append([]string{"tools", "crd-upgrade-safety-webhook", "rbac", "--namespace", ns, "--name", roleName}, extra...)...)
		require.Equal(t, 0, r.exitCode, r.out)
		require.Contains(t, r.stdout, "kind: ClusterRole\n")
		d := e.kapp(t, r.stdout, "deploy", "-a", rbacApp, "-f", "-", "-y")
		require.Equal(t, 0, d.exitCode, d.out)
	}
	applyRole()

	// A CRD of a group of its own, created after the role, with a custom
	// resource.
	g := n.Singular + ".rbac.example.com"
	n.CRD, n.Group = n.Plural+"."+g, g
	crdYAML := strings.ReplaceAll(string(n.render(t, "base/crd.yaml")), "e2e.example.com", g)
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{dir(t, map[string][]byte{"crd.yaml": []byte(crdYAML)})})
	gvr := n.gvr("v1")
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": g + "/v1", "kind": n.Kind,
		"metadata": map[string]any{"name": "first", "namespace": "default"}, "spec": map[string]any{"replicas": int64(3)}}}
	_, err := untilServed(func() (*unstructured.Unstructured, error) {
		return e.dyn.Resource(gvr).Namespace("default").Create(tctx(t), cr, metav1.CreateOptions{})
	})
	require.NoError(t, err)

	// What the service account may read.
	require.False(t, e.canI(t, subject, "list", "", "secrets"), "the webhook may not list Secrets")
	require.False(t, e.canI(t, subject, "list", "", "configmaps"), "the webhook may not list ConfigMaps")
	require.False(t, e.canI(t, subject, "list", "apps", "deployments"), "nor any other built-in resource")
	require.True(t, e.canI(t, subject, "list", "apiextensions.k8s.io", "customresourcedefinitions"))
	require.False(t, e.canI(t, subject, "list", g, n.Plural), "the CRD came after the role")

	p := e.startWebhookAs(t, "", e.serviceAccountKubeconfig(t, ns, sa))
	e.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
	e.requireWebhookCalled(t, n, p)

	// A safe update still needs the stored objects read: denied (failMode
	// closed), naming the rule and the command.
	before := e.snapshot(t, n)
	update := func() error {
		t.Helper()
		live := e.getCRD(t, n)
		require.NotNil(t, live)
		versions, _, _ := unstructured.NestedSlice(live.Object, "spec", "versions")
		props := versions[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)["properties"].(map[string]any)
		props["priority"] = map[string]any{"type": "integer"}
		require.NoError(t, unstructured.SetNestedSlice(live.Object, versions, "spec", "versions"))
		_, err := e.dyn.Resource(crdGVR).Update(tctx(t), live, metav1.UpdateOptions{})
		return err
	}
	err = update()
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), err)
	msg := err.Error()
	t.Logf("denial: %s", msg)
	require.Contains(t, msg, "CRDUpgradeSafety could not check the update of CRD "+n.CRD+", denied under failMode closed: "+
		"the webhook may not list "+n.Plural+"."+g+" (403 Forbidden from the apiserver)")
	require.Contains(t, msg, fmt.Sprintf(`its ClusterRole lacks the rule {apiGroups: [%q], resources: [%q], verbs: ["list"]}`, g, n.Plural))
	require.Contains(t, msg, report.WebhookRBACCommand)
	e.requireUnchanged(t, n, before)
	require.Regexp(t, `(?m)^crd_upgrade_safety_webhook_failures_total\{cause="forbidden"\} [1-9]`, p.metrics(t))

	// Generated and applied again: the role covers the new CRD, and still
	// nothing else.
	applyRole()
	require.True(t, e.canI(t, subject, "list", g, n.Plural))
	require.False(t, e.canI(t, subject, "list", "", "secrets"))
	deadline := time.Now().Add(20 * time.Second) // RBAC's informers see the new role within a moment
	for err = update(); err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), "403 Forbidden from the apiserver") &&
		time.Now().Before(deadline); err = update() {
		time.Sleep(250 * time.Millisecond)
	}
	require.NoError(t, err)
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), "priority")

	// Issue 37 item 7: the removal of a version reads the ownerReferences
	// of the objects of every kind, where most dependents live (ConfigMaps,
	// Deployments), which the role does not allow: under failMode closed
	// the removal is denied, naming the resources and the role that grants
	// the reads. With that role (rbac --dependents) the dependents are
	// read: a ConfigMap whose ownerReference names the version blocks the
	// removal, and once it is gone the removal goes through.
	editVersions := func(edit func([]any) []any) error {
		t.Helper()
		live := e.getCRD(t, n)
		require.NotNil(t, live)
		versions, _, _ := unstructured.NestedSlice(live.Object, "spec", "versions")
		require.NoError(t, unstructured.SetNestedSlice(live.Object, edit(versions), "spec", "versions"))
		_, err := e.dyn.Resource(crdGVR).Update(tctx(t), live, metav1.UpdateOptions{})
		return err
	}
	require.NoError(t, editVersions(func(vs []any) []any { // v0: not served, never stored
		v0 := runtime.DeepCopyJSONValue(vs[0]).(map[string]any)
		v0["name"], v0["served"], v0["storage"] = "v0", false, false
		return append(vs, v0)
	}))
	removeV0 := func() error {
		return editVersions(func(vs []any) []any {
			var kept []any
			for _, v := range vs {
				if v.(map[string]any)["name"] != "v0" {
					kept = append(kept, v)
				}
			}
			return kept
		})
	}
	err = removeV0()
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), err)
	msg = err.Error()
	t.Logf("denial: %s", msg)
	require.Contains(t, msg, "CRDUpgradeSafety denied the update of CRD "+n.CRD)
	require.Regexp(t, `the ownerReferences of \d+ resources could not be read, so dependents of the removed version there are unknown \(failMode closed\): `+
		`apiservices.apiregistration.k8s.io: forbidden; `, msg)
	require.Contains(t, msg, finding.DependentsRBACCommand)
	require.Contains(t, e.crdSchemaJSON(t, n, "v0"), "priority", "v0 is kept")

	applyRole("--dependents")
	require.True(t, e.canI(t, subject, "list", "", "configmaps"))
	require.True(t, e.canI(t, subject, "list", "apps", "deployments"))
	owner, err := e.dyn.Resource(gvr).Namespace("default").Get(tctx(t), "first", metav1.GetOptions{})
	require.NoError(t, err)
	// The finalizer keeps the dependent listed should the garbage
	// collector delete it (its owner at an unserved version answers 404).
	const finalizer = "e2e.example.com/keep"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent-" + n.Singular, Namespace: "default", Finalizers: []string{finalizer},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: g + "/v0", Kind: n.Kind, Name: "first", UID: owner.GetUID()}}}}
	_, err = e.core.CoreV1().ConfigMaps("default").Create(tctx(t), cm, metav1.CreateOptions{})
	require.NoError(t, err)
	releaseCM := func() {
		_, _ = e.core.CoreV1().ConfigMaps("default").Patch(tctx(t), cm.Name, types.JSONPatchType,
			[]byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
		_ = e.core.CoreV1().ConfigMaps("default").Delete(tctx(t), cm.Name, metav1.DeleteOptions{})
	}
	t.Cleanup(releaseCM)
	deadline = time.Now().Add(20 * time.Second) // RBAC's informers see the new role within a moment
	for err = removeV0(); err != nil && strings.Contains(err.Error(), "could not be read") && time.Now().Before(deadline); err = removeV0() {
		time.Sleep(250 * time.Millisecond)
	}
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), err)
	t.Logf("denial: %s", err)
	require.Contains(t, err.Error(), `version "v0" removed while ownerReferences of other objects name it (configmaps)`)
	require.NotContains(t, err.Error(), "could not be read")

	releaseCM()
	require.Eventually(t, func() bool {
		_, err := e.core.CoreV1().ConfigMaps("default").Get(tctx(t), cm.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 20*time.Second, 250*time.Millisecond)
	require.NoError(t, removeV0())
	spec, _ := e.crdVersions(t, n)
	require.Equal(t, []string{"v1"}, spec)
}

// canI answers `kubectl auth can-i verb group/resource -A --as=user` (in
// every namespace: the webhook lists across them) with the
// cluster's kubectl (KUBECTL), or else with the SubjectAccessReview that
// kubectl sends.
func (e *env) canI(t *testing.T, user, verb, group, resource string) bool {
	t.Helper()
	if kubectl := os.Getenv("KUBECTL"); kubectl != "" {
		res := resource
		if group != "" {
			res += "." + group
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", e.kubeconfig, "auth", "can-i", verb, res, "-A", "--as="+user).CombinedOutput()
		answer := strings.TrimSpace(string(out))
		t.Logf("$ kubectl auth can-i %s %s -A --as=%s\n%s", verb, res, user, indent(answer))
		switch answer {
		case "yes":
			require.NoError(t, err)
			return true
		case "no":
			return false
		}
		t.Fatalf("kubectl auth can-i: %v: %s", err, answer)
	}
	sar, err := e.core.AuthorizationV1().SubjectAccessReviews().Create(tctx(t), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return sar.Status.Allowed
}

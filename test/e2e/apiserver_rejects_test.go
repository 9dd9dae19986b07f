package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// TestAPIServerRejectsOneOfSeveral: a deploy updates two CRDs; the
// apiserver would refuse the update of the second. Without the check kapp
// applies the first and fails on the second, half way. With it the refusal
// is an apiserverRejects error found before anything is applied, even in
// mode warn (where every other finding only warns), and both CRDs, their
// custom resources and the rest of the change set stay as they were.
func TestAPIServerRejectsOneOfSeveral(t *testing.T) {
	e := setup(t)
	cases := []struct {
		name     string
		template string
		field    string // a piece of the rejected field path
	}{
		{name: "invalid-schema", template: "rejects/invalid-schema.yaml",
			field: "spec.versions[*].schema.openAPIV3Schema.properties[spec].properties[size].type"},
		{name: "additional-properties-beside-properties", template: "rejects/additional-properties.yaml",
			field: "spec.versions[*].schema.openAPIV3Schema.properties[spec].additionalProperties"},
		{name: "cel-over-cost-budget", template: "rejects/cel-cost.yaml",
			field: "x-kubernetes-validations[0].rule"},
		{name: "stored-version-dropped", template: "rejects/stored-version-dropped.yaml",
			field: "status.storedVersions[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := newNames(t), newNames(t)
			app := a.App
			e.cleanupApp(t, app)
			e.deployOK(t, app, []string{dir(t, map[string][]byte{
				"a.yaml": a.render(t, "base/crd.yaml"), "b.yaml": b.render(t, "base/crd.yaml")})})
			e.createCRs(t, a, "base/crs.yaml")
			e.createCRs(t, b, "base/crs.yaml")
			beforeA, beforeB := e.snapshot(t, a), e.snapshot(t, b)

			r := e.deploy(t, app, []string{dir(t, map[string][]byte{
				"a.yaml":      a.render(t, "safe/new.yaml"),
				"b.yaml":      b.render(t, tc.template),
				"marker.yaml": a.marker(),
				"config.yaml": a.render(t, "configs/warn.yaml"),
			})})
			requireBlocked(t, r)
			requireFinding(t, r.out, "apiserverRejects", b.CRD, tc.field, "the apiserver refuses the update")
			requireNoFinding(t, r.out, "apiserverRejects", a.CRD)
			e.requireUnchanged(t, a, beforeA)
			e.requireUnchanged(t, b, beforeB)
		})
	}
}

var (
	policyGVR  = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	bindingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
)

// freezeCRD installs a ValidatingAdmissionPolicy (and its binding) that
// denies every update of the test's CRD, with no reason of its own (so the
// apiserver answers 422 Invalid), and waits until the apiserver enforces
// it. It is removed when the test ends, before the app is deleted.
func (e *env) freezeCRD(t *testing.T, n names) {
	t.Helper()
	name := "freeze-" + n.Singular
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{"apiextensions.k8s.io"}, "apiVersions": []any{"v1"},
				"resources": []any{"customresourcedefinitions"}, "operations": []any{"UPDATE"},
				"resourceNames": []any{n.CRD},
			}}},
			"validations": []any{map[string]any{"expression": "false", "message": "CRD " + n.CRD + " is frozen"}},
		},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"policyName": name, "validationActions": []any{"Deny"}},
	}}
	_, err := e.dyn.Resource(policyGVR).Create(tctx(t), policy, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.dyn.Resource(bindingGVR).Create(tctx(t), binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = e.dyn.Resource(bindingGVR).Delete(tctx(t), name, metav1.DeleteOptions{})
		_ = e.dyn.Resource(policyGVR).Delete(tctx(t), name, metav1.DeleteOptions{})
		// Wait until updates pass again, so that deleting the app works.
		e.waitForPolicy(t, n, false)
	})
	e.waitForPolicy(t, n, true)
}

// waitForPolicy waits until a dry-run update of the CRD is denied (or,
// with denied false, accepted) by the policy.
func (e *env) waitForPolicy(t *testing.T, n names, denied bool) {
	t.Helper()
	waitForDryRunUpdate(t, e.dyn.Resource(crdGVR), n.CRD, denied)
}

// waitForDryRunUpdate waits until a dry-run update of the object name of
// ri, as it is, is denied as invalid (or, with denied false, accepted): an
// admission policy just bound (or deleted) takes a moment to be enforced
// (or not).
func waitForDryRunUpdate(t *testing.T, ri dynamic.ResourceInterface, name string, denied bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		obj, err := ri.Get(tctx(t), name, metav1.GetOptions{})
		require.NoError(t, err)
		_, err = ri.Update(tctx(t), obj, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case denied && apierrors.IsInvalid(err):
			return
		case !denied && err == nil:
			return
		case err != nil && !apierrors.IsInvalid(err) && !apierrors.IsConflict(err):
			require.NoError(t, err)
		}
		require.Truef(t, time.Now().Before(deadline), "the policy is not (or still) enforced after 45s (denied=%v, last error %v)", denied, err)
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAPIServerRejectsPolicy: a ValidatingAdmissionPolicy denies updates of
// the CRD. Only the apiserver knows that: the check's server-side dry run
// of the update finds it, and nothing is applied. With fallback-on-replace
// the same denial (422 Invalid) would make kapp delete and recreate the
// CRD: a crdDeletion.
func TestAPIServerRejectsPolicy(t *testing.T) {
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		e, n := baseApp(t)
		e.freezeCRD(t, n)
		before := e.snapshot(t, n)

		r := e.deploy(t, n.App, []string{crdDir(t, n, "safe/new.yaml", n.marker())}, preflightFlag)
		requireBlocked(t, r)
		requireFinding(t, r.out, "apiserverRejects", n.CRD,
			"the apiserver refuses the update (server-side dry run)", "ValidatingAdmissionPolicy 'freeze-"+n.Singular+"'",
			"CRD "+n.CRD+" is frozen")
		e.requireUnchanged(t, n, before)
	})

	t.Run("fallback-on-replace", func(t *testing.T) {
		t.Parallel()
		e, n := baseApp(t)
		e.freezeCRD(t, n)
		before := e.snapshot(t, n)

		crd := withUpdateStrategy(t, n, n.render(t, "safe/new.yaml"), "fallback-on-replace")
		r := e.deploy(t, n.App, []string{dir(t, map[string][]byte{"crd.yaml": crd, "marker.yaml": n.marker()})}, preflightFlag)
		requireBlocked(t, r)
		requireFinding(t, r.out, "crdDeletion", n.CRD,
			"update strategy fallback-on-replace, and the apiserver refuses the update (server-side dry run",
			"is frozen", "deleting its 2 existing custom resources")
		e.requireUnchanged(t, n, before)
	})
}

// TestToolsAPIServerRejects: the tools command validates the new CRDs as
// the apiserver would, offline and against the cluster: a refused CRD is an
// apiserverRejects error (exit status 3), not an input error.
func TestToolsAPIServerRejects(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	before := e.snapshot(t, n)
	bad := filepath.Join(crdDir(t, n, "rejects/additional-properties.yaml"), "crd.yaml")
	old := filepath.Join(crdDir(t, n, "base/crd.yaml"), "crd.yaml")

	r := e.kapp(t, "", "tools", "crd-upgrade-safety", "--file2", bad)
	require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
	requireFinding(t, r.out, "apiserverRejects", n.CRD, "additionalProperties", "mutual exclusive")

	r = e.kapp(t, "", "tools", "crd-upgrade-safety", "-f", old, "--file2", bad, "--kubeconfig", "/nonexistent/kubeconfig")
	require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
	requireFinding(t, r.out, "apiserverRejects", n.CRD, "additionalProperties", "mutual exclusive")

	// An invalid old file that a valid update replaces: the apiserver
	// accepts the update, so the old CRD is not validated on its own (only
	// to explain a refusal) and the comparison goes on.
	r = e.kapp(t, "", "tools", "crd-upgrade-safety", "-f", bad, "--file2", old, "--kubeconfig", "/nonexistent/kubeconfig")
	requireNoFinding(t, r.out, "apiserverRejects", n.CRD)
	requireFinding(t, r.out, "enum", n.CRD, "^.spec.color")
	// Unchanged, it is the only validation: a warning.
	r = e.kapp(t, "", "tools", "crd-upgrade-safety", "-f", bad, "--file2", bad, "--kubeconfig", "/nonexistent/kubeconfig")
	requireFinding(t, r.out, "apiserverRejects", n.CRD, "warning", "the old CRD is itself invalid")
	e.requireUnchanged(t, n, before)
}

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// The admission webhook against the real apiserver (issue 25 item 6): every
// writer is held to the check, not only this kapp.

// webhookDenial is how the apiserver reports the webhook's denial.
const webhookDenial = `denied the request: CRDUpgradeSafety denied the update of CRD `

// TestWebhookDeniesUnsafeUpdate: an unsafe update from a plain API client is
// denied (403) with its findings, and nothing changes; the same as a
// server-side dry run; a safe update goes through.
func TestWebhookDeniesUnsafeUpdate(t *testing.T) {
	t.Parallel()
	e, n, _ := webhookApp(t, "")
	before := e.snapshot(t, n)

	for _, dryRun := range []bool{true, false} {
		_, err := e.updateCRD(t, n, "unsafe/enum-value-removed/new.yaml", dryRun, nil)
		require.Error(t, err)
		require.Truef(t, apierrors.IsForbidden(err), "denied as Forbidden (403), not Invalid (kapp's fallback-on-replace would replace the CRD): %v", err)
		require.Contains(t, err.Error(), webhookDenial+n.CRD+": 1 error finding:")
		requireFinding(t, err.Error(), "enum", n.CRD, "v1", "^.spec.color")
	}
	e.requireUnchanged(t, n, before)

	warnings, err := e.updateCRD(t, n, "safe/new.yaml", false, nil)
	require.NoError(t, err)
	require.Empty(t, warnings)
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), "priority")
}

// TestWebhookExistingResources: a change the schema comparison alone allows
// but that a stored custom resource violates is denied by the live check.
func TestWebhookExistingResources(t *testing.T) {
	t.Parallel()
	e, n, p := webhookApp(t, "checks:\n  sameVersion:\n    enum: {enabled: false}\n")
	before := e.snapshot(t, n)
	// blue is in use by the custom resource "second".
	_, err := e.updateCRD(t, n, "live/blue-removed.yaml", false, nil)
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), err)
	requireFinding(t, err.Error(), "existingResources", n.CRD, "default/second")
	e.requireUnchanged(t, n, before)

	// The running process's /metrics: the denial, by check, and the stored
	// objects it read.
	metrics := p.metrics(t)
	for _, re := range []string{
		`crd_upgrade_safety_webhook_review_duration_seconds_count\{decision="denied",operation="update"\} [1-9]`,
		`crd_upgrade_safety_webhook_decisions_by_check_total\{check="existingResources",severity="error"\} [1-9]`,
		`crd_upgrade_safety_webhook_stored_objects_read_total [1-9]`,
		`crd_upgrade_safety_webhook_certificate_expiry_timestamp_seconds [1-9]`,
		`crd_upgrade_safety_webhook_reviews_in_flight 0`,
	} {
		require.Regexp(t, `(?m)^`+re, metrics)
	}
}

// TestWebhookKubectl: `kubectl apply` of an unsafe CRD update is denied
// with the findings and changes nothing; of a safe one, applied.
func TestWebhookKubectl(t *testing.T) {
	t.Parallel()
	kubectl := os.Getenv("KUBECTL")
	if kubectl == "" {
		t.Skip("KUBECTL is not set: the path of a kubectl binary (hack/test-e2e.sh sets it to the cluster's version's kubectl)")
	}
	e, n, _ := webhookApp(t, "")
	before := e.snapshot(t, n)
	apply := func(template string) (string, error) {
		path := filepath.Join(t.TempDir(), "crd.yaml")
		require.NoError(t, os.WriteFile(path, n.render(t, template), 0o600))
		out, err := exec.Command(kubectl, "--kubeconfig", e.kubeconfig, "apply", "-f", path).CombinedOutput()
		t.Logf("$ kubectl apply -f %s\n%s", template, indent(string(out)))
		return string(out), err
	}
	out, err := apply("unsafe/maximum-decreased/new.yaml")
	require.Error(t, err)
	require.Contains(t, out, webhookDenial+n.CRD)
	requireFinding(t, out, "maximum", n.CRD, "v1", "^.spec.replicas")
	e.requireUnchanged(t, n, before)

	out, err = apply("safe/new.yaml")
	require.NoError(t, err, out)
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), "priority")
}

// TestWebhookWarnMode: in mode warn the update goes through and the
// findings come back as warnings, which clients print.
func TestWebhookWarnMode(t *testing.T) {
	t.Parallel()
	e, n, _ := webhookApp(t, "mode: warn\n")
	warnings, err := e.updateCRD(t, n, "unsafe/enum-value-removed/new.yaml", false, nil)
	require.NoError(t, err)
	// The stored objects were read: none holds green.
	require.Equal(t, []string{`CRDUpgradeSafety: version v1 field ^.spec.color: [enum] enum values removed: ["green"]: none of 2 stored ` + n.Kind + `s affected`}, withoutFingerprints(t, warnings))
	require.NotContains(t, e.crdSchemaJSON(t, n, "v1"), "green")
}

// TestWebhookDeniesDeletion: deleting a CRD that has custom resources is
// denied (they would all be lost), and nothing is deleted; the waiver
// annotation on the CRD does not change that (no annotation passes a loss
// of stored data); once the custom resources are deleted, the CRD can be.
func TestWebhookDeniesDeletion(t *testing.T) {
	t.Parallel()
	e, n, _ := webhookApp(t, "annotationWaivers:\n  checks: [crdDeletion]\n")
	before := e.snapshot(t, n)
	err := e.dyn.Resource(crdGVR).Delete(tctx(t), n.CRD, metav1.DeleteOptions{})
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), err)
	require.Contains(t, err.Error(), "CRDUpgradeSafety denied the delete of CRD "+n.CRD+": 1 error finding:")
	requireFinding(t, err.Error(), "crdDeletion", n.CRD, "deleting the CRD would delete its 2 existing custom resources")
	e.requireUnchanged(t, n, before)

	e.annotateCRD(t, n, map[string]string{config.WaiveAnnotation: "crdDeletion", config.WaiveReasonAnnotation: "e2e: data no longer needed"})
	err = e.dyn.Resource(crdGVR).Delete(tctx(t), n.CRD, metav1.DeleteOptions{})
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), err)
	requireFinding(t, err.Error(), "crdDeletion", n.CRD, "not exempted: a waiver annotation cannot waive a loss of stored data")
	require.Contains(t, err.Error(), "acceptDataLoss: [{crd: "+n.CRD+", check: crdDeletion, objects: 2,")
	require.NotNil(t, e.getCRD(t, n))

	require.NoError(t, e.dyn.Resource(n.gvr("v1")).Namespace("default").DeleteCollection(tctx(t), metav1.DeleteOptions{}, metav1.ListOptions{}))
	require.Eventually(t, func() bool {
		return e.dyn.Resource(crdGVR).Delete(tctx(t), n.CRD, metav1.DeleteOptions{}) == nil
	}, 30*time.Second, 300*time.Millisecond, "the CRD without custom resources could not be deleted")
}

// TestWebhookWaiver: where the webhook's settings let annotations waive
// a check (annotationWaivers), the waiver annotations on the new CRD let
// the reviewed findings through as warnings; the other findings still
// deny; an invalid waiver is denied.
func TestWebhookWaiver(t *testing.T) {
	t.Parallel()
	e, n, _ := webhookApp(t, "annotationWaivers:\n  checks: [enum, maximum]\n")
	before := e.snapshot(t, n)
	_, err := e.updateCRD(t, n, "unsafe/enum-value-removed/new.yaml", false,
		map[string]string{config.WaiveAnnotation: "maximum", config.WaiveReasonAnnotation: "the wrong check"})
	require.Error(t, err)
	requireFinding(t, err.Error(), "enum", n.CRD)
	_, err = e.updateCRD(t, n, "unsafe/enum-value-removed/new.yaml", false, map[string]string{config.WaiveAnnotation: "enum"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "invalid waiver annotation: crd-upgrade-safety.kapp.k14s.io/waive requires crd-upgrade-safety.kapp.k14s.io/waive-reason")
	e.requireUnchanged(t, n, before)

	warnings, err := e.updateCRD(t, n, "unsafe/enum-value-removed/new.yaml", false,
		map[string]string{config.WaiveAnnotation: "enum", config.WaiveReasonAnnotation: "green was never used (e2e)"})
	require.NoError(t, err)
	require.Equal(t, []string{`CRDUpgradeSafety: version v1 field ^.spec.color: [enum] enum values removed: ["green"]: none of 2 stored ` + n.Kind + `s affected (exempted: waive annotation: green was never used (e2e))`},
		withoutFingerprints(t, warnings))
	require.NotContains(t, e.crdSchemaJSON(t, n, "v1"), "green")
}

// TestWebhookFailurePolicy: with the webhook stopped, failurePolicy Fail
// refuses every update of the CRD with a message that names the webhook,
// and Ignore lets an (unsafe) update through unchecked.
func TestWebhookFailurePolicy(t *testing.T) {
	t.Parallel()
	for _, policy := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			e, n := baseApp(t)
			p := e.startWebhook(t, "")
			e.registerWebhook(t, n, p.url(), p.cert.PEM, policy)
			e.requireWebhookCalled(t, n, p)
			p.stop(t)
			before := e.snapshot(t, n)

			_, err := e.updateCRD(t, n, "safe/new.yaml", false, nil)
			if policy == admissionregistrationv1.Fail {
				require.Error(t, err)
				require.Contains(t, err.Error(), `failed calling webhook "`+n.Singular+`.webhook.e2e.example.com"`)
				require.Contains(t, err.Error(), "connection refused")
				e.requireUnchanged(t, n, before)
				return
			}
			require.NoError(t, err)
			_, err = e.updateCRD(t, n, "unsafe/enum-value-removed/new.yaml", false, nil)
			require.NoError(t, err, "Ignore: nothing checks the update")
			require.NotContains(t, e.crdSchemaJSON(t, n, "v1"), "green")
		})
	}
}

// TestWebhookBlocksKappWithoutPreflight: a deploy by kapp without the
// preflight (stock kapp's behaviour) is blocked by the webhook, and kapp
// reports its findings.
func TestWebhookBlocksKappWithoutPreflight(t *testing.T) {
	t.Parallel()
	e, n, _ := webhookApp(t, "")
	before := e.snapshot(t, n)
	r := e.deploy(t, n.App, []string{crdDir(t, n, "unsafe/enum-value-removed/new.yaml")})
	require.NotEqual(t, 0, r.exitCode, r.out)
	require.Contains(t, r.out, "CRDUpgradeSafety denied the update of CRD "+n.CRD) // kapp breaks the line before it
	requireFinding(t, r.out, "enum", n.CRD, "v1", "^.spec.color")
	e.requireUnchanged(t, n, before)
	require.False(t, strings.Contains(r.out, "preflight"), "the preflight did not run: the webhook blocked the update")
}

// TestWebhookInstallManifests: every object of the install in
// examples/webhook is valid for the apiserver (a server-side dry run of
// its apply), and so are the cert-manager variant (against cert-manager's
// own CRDs, from .cache/crds when hack/fetch-crds.sh has fetched them) and
// the waiver policy. (TestWebhook* run the server under the shipped RBAC.)
func TestWebhookInstallManifests(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.webhookKubeconfig(t) // the namespace exists
	var certManagerCRDs []*unstructured.Unstructured
	for _, kind := range []string{"certificates", "issuers"} {
		path := filepath.Join("..", "..", ".cache", "crds", "cert-manager", "cert-manager.io_"+kind+".yaml")
		if _, err := os.Stat(path); err == nil {
			certManagerCRDs = append(certManagerCRDs, readManifests(t, path)...)
		}
	}
	if len(certManagerCRDs) == 2 {
		require.NoError(t, e.applyObjects(certManagerCRDs))
		for _, crd := range certManagerCRDs {
			e.waitEstablished(t, crd.GetName())
		}
	}
	mapper, err := e.mapper()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(examplesDir, "webhook*", "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 8)
	kinds := map[string]bool{}
	for _, f := range files {
		for _, obj := range readManifests(t, f) {
			ri, err := e.resourceFor(mapper, obj)
			if err != nil && obj.GroupVersionKind().Group == "cert-manager.io" {
				t.Logf("%s: %s %s not checked: cert-manager's CRDs are not installed (hack/fetch-crds.sh fetches them)", f, obj.GetKind(), obj.GetName())
				continue
			}
			require.NoError(t, err, f)
			_, err = ri.Apply(tctx(t), obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "e2e", DryRun: []string{metav1.DryRunAll}})
			require.NoErrorf(t, err, "%s: %s %s", f, obj.GetKind(), obj.GetName())
			kinds[obj.GetKind()] = true
		}
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment",
		"PodDisruptionBudget", "Service", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		require.True(t, kinds[k], k)
	}
}

// TestWebhookWaiverPolicy: the ValidatingAdmissionPolicy of
// examples/webhook-waiver-policy lets only members of the group
// crd-upgrade-safety:waivers set or change the waiver annotations; anyone
// who may update the CRD may keep them as they are or remove them. The
// shipped policy is used as it is, bound to this test's CRD only.
func TestWebhookWaiverPolicy(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	objs := readManifests(t, filepath.Join(examplesDir, "webhook-waiver-policy", "waiver-policy.yaml"))
	require.Len(t, objs, 2)
	policy, binding := objs[0], objs[1]
	name := "e2e-" + n.Singular
	policy.SetName(name)
	binding.SetName(name)
	require.NoError(t, unstructured.SetNestedField(binding.Object, name, "spec", "policyName"))
	require.NoError(t, unstructured.SetNestedField(binding.Object, map[string]any{
		"objectSelector": map[string]any{"matchLabels": map[string]any{"e2e-waiver-policy": n.Singular}}}, "spec", "matchResources"))

	// alice and bob may update CRDs; bob is in the group.
	role := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": name},
		"rules": []any{map[string]any{"apiGroups": []any{"apiextensions.k8s.io"}, "resources": []any{"customresourcedefinitions"},
			"verbs": []any{"get", "update", "patch"}}}}}
	roleBinding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": name},
		"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
		"subjects": []any{
			map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice-" + n.Singular},
			map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob-" + n.Singular},
		}}}
	require.NoError(t, e.applyObjects([]*unstructured.Unstructured{policy, binding, role, roleBinding}))
	t.Cleanup(func() { e.deleteObjects(t, policy, binding, role, roleBinding) })
	e.labelCRD(t, n, "e2e-waiver-policy", n.Singular)

	alice := e.impersonating(t, "alice-"+n.Singular)
	bob := e.impersonating(t, "bob-"+n.Singular, "crd-upgrade-safety:waivers")
	waive := func(client dynamic.Interface, dryRun bool, annotations map[string]any) error {
		data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
		require.NoError(t, err)
		opts := metav1.PatchOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err = client.Resource(crdGVR).Patch(tctx(t), n.CRD, types.MergePatchType, data, opts)
		return err
	}
	waiver := map[string]any{config.WaiveAnnotation: "enum", config.WaiveReasonAnnotation: "reviewed"}
	const denied = "only members of the group crd-upgrade-safety:waivers may set or change the annotations " +
		"crd-upgrade-safety.kapp.k14s.io/waive, waive-fingerprints, waive-reason, waive-expires and waive-owner (alice-"

	// The policy takes effect once the apiserver has compiled it.
	require.Eventually(t, func() bool {
		err := waive(alice, true, waiver)
		return err != nil && strings.Contains(err.Error(), denied)
	}, 30*time.Second, 200*time.Millisecond, "the policy never denied alice")
	err := waive(alice, false, waiver)
	require.True(t, apierrors.IsForbidden(err), "Forbidden, not Invalid (kapp's fallback-on-replace): %v", err)
	require.Contains(t, err.Error(), denied)

	require.NoError(t, waive(bob, false, waiver), "bob is in the group")
	require.NoError(t, waive(alice, false, map[string]any{"note": "unrelated"}), "the waiver unchanged: anyone who may update")
	require.ErrorContains(t, waive(alice, false, map[string]any{config.WaiveReasonAnnotation: "changed"}), denied)
	require.ErrorContains(t, waive(alice, false, map[string]any{config.WaiveFingerprintsAnnotation: "0123456789ab"}), denied,
		"a fingerprint added under the reviewed reason")
	require.ErrorContains(t, waive(alice, false, map[string]any{config.WaiveExpiresAnnotation: "2099-12-31"}), denied, "the expiry moved")
	require.NoError(t, waive(alice, false, map[string]any{config.WaiveAnnotation: nil, config.WaiveReasonAnnotation: nil}),
		"removing the waiver")
}

var (
	upstreamKappOnce sync.Once
	upstreamKapp     string
	upstreamKappErr  error
)

// upstreamKappBinary is upstream kapp v0.66.0's own binary, without our
// preflight: $KAPP_UPSTREAM_BINARY, or built from the module this one is
// built on (carvel.dev/kapp/cmd/kapp at the version of go.mod) once per run.
func upstreamKappBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("KAPP_UPSTREAM_BINARY"); bin != "" {
		return bin
	}
	upstreamKappOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kapp-upstream")
		if err != nil {
			upstreamKappErr = err
			return
		}
		upstreamKapp = filepath.Join(dir, "kapp")
		cmd := exec.Command("go", "build", "-o", upstreamKapp, "carvel.dev/kapp/cmd/kapp")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			upstreamKappErr = fmt.Errorf("building upstream kapp: %w\n%s", err, out)
		}
	})
	require.NoError(t, upstreamKappErr)
	return upstreamKapp
}

// TestWebhookBlocksUpstreamKapp: upstream kapp v0.66.0's own binary, which
// has no CRDUpgradeSafety preflight of ours, is held to the check by the
// webhook: its unsafe deploy fails with the findings, nothing changes; a
// safe deploy goes through.
func TestWebhookBlocksUpstreamKapp(t *testing.T) {
	t.Parallel()
	bin := upstreamKappBinary(t)
	e, n, _ := webhookApp(t, "")
	before := e.snapshot(t, n)
	run := func(template string) (string, error) {
		cmd := exec.Command(bin, "deploy", "-a", n.App, "-y", "-f", crdDir(t, n, template), "--kubeconfig", e.kubeconfig, "--color=false")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig)
		out, err := cmd.CombinedOutput()
		t.Logf("$ kapp-upstream deploy -a %s -f %s\n%s", n.App, template, indent(string(out)))
		return string(out), err
	}
	out, err := run("unsafe/enum-value-removed/new.yaml")
	require.Error(t, err)
	require.Contains(t, out, "CRDUpgradeSafety denied the update of CRD "+n.CRD)
	requireFinding(t, out, "enum", n.CRD, "v1", "^.spec.color")
	e.requireUnchanged(t, n, before)

	out, err = run("safe/new.yaml")
	require.NoError(t, err, out)
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), "priority")
}

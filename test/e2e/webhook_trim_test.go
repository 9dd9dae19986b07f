package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// status.storedVersions only on evidence (docs/webhook.md, docs/migrate.md):
// the webhook, registered as examples/webhook/webhook.yaml registers it
// (customresourcedefinitions/status, called only when storedVersions
// shrinks), refuses a trim by hand and accepts the migrate command's.

// handTrim sets status.storedVersions of n's CRD to [v1] as a user would,
// with kubectl patch --subresource=status (through the dynamic client when
// KUBECTL is not set).
func (e *env) handTrim(t *testing.T, n names) (string, error) {
	t.Helper()
	if kubectl := os.Getenv("KUBECTL"); kubectl != "" {
		out, err := exec.Command(kubectl, "--kubeconfig", e.kubeconfig, "patch", "crd", n.CRD, "--subresource=status",
			"--type=merge", "-p", `{"status":{"storedVersions":["v1"]}}`).CombinedOutput()
		return string(out), err
	}
	crd := e.getCRD(t, n)
	require.NoError(t, unstructured.SetNestedStringSlice(crd.Object, []string{"v1"}, "status", "storedVersions"))
	_, err := e.dyn.Resource(crdGVR).UpdateStatus(tctx(t), crd, metav1.UpdateOptions{FieldManager: "kubectl-patch"})
	if err != nil {
		return err.Error(), err
	}
	return "", nil
}

// TestWebhookRefusesHandTrimOfStoredVersions: a trim of
// status.storedVersions with no migration is refused, naming the version
// and the migrate command, and every object stays readable; the migrate
// command's trim (either method) passes the same webhook on its evidence,
// and then the removal of the version deploys.
func TestWebhookRefusesHandTrimOfStoredVersions(t *testing.T) {
	t.Parallel()
	e, n := migrateApp(t, func(e *env, n names) { e.createCRs(t, n, "migrate/crs.yaml") })
	p := e.startWebhook(t, "")
	e.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
	e.requireWebhookCalled(t, n, p)

	out, err := e.handTrim(t, n)
	require.Error(t, err, out)
	require.Contains(t, out, "denied the update of the status of CRD "+n.CRD)
	require.Contains(t, out, `"v1alpha1"`)
	require.Contains(t, out, "kapp tools crd-migrate-storage --crd "+n.CRD+" --to v1")
	require.Equal(t, []string{"v1alpha1", "v1"}, e.storedVersions(t, n), "the trim was refused")
	before := e.snapshot(t, n) // a LIST at v1 fails if an object is undecodable
	require.Len(t, before.CRs, 4)

	r := e.migrate(t, "--crd", n.CRD, "--to", "v1", "-y")
	require.Equalf(t, 0, r.exitCode, "output:\n%s\nwebhook log:\n%s", r.out, p.log.String())
	require.Equal(t, []string{"v1"}, e.storedVersions(t, n))
	crd := e.getCRD(t, n)
	require.Equal(t, "v1", crd.GetAnnotations()["migration.crd-upgrade-safety.kapp.k14s.io/storage-version"], "the migrate command's record")
	log := p.log.String()
	require.Contains(t, log, "status.storedVersions trimmed of v1alpha1 on evidence: ")
	if strings.Contains(r.out, "Method: migrator") {
		require.Contains(t, log, "on evidence: StorageVersionMigration ", "the cluster's migrator trimmed it")
	} else {
		require.Contains(t, log, "on evidence: the migrate command's record")
	}

	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/3-v1alpha1-unserved.yaml")}, preflightFlag)
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml")}, preflightFlag)
	after := e.snapshot(t, n)
	require.Len(t, after.CRs, 4, "every object is still there and readable")
}

// TestPreflightBlocksRemovalAfterHandTrim: without the webhook a trim by
// hand goes through; the check then blocks the removal of the trimmed
// version (the objects may still be stored in it), and the migrate command
// migrates the objects again, after which the removal deploys.
func TestPreflightBlocksRemovalAfterHandTrim(t *testing.T) {
	t.Parallel()
	e, n := migrateApp(t, func(e *env, n names) { e.createCRs(t, n, "migrate/crs.yaml") })
	out, err := e.handTrim(t, n)
	require.NoError(t, err, out)
	require.Equal(t, []string{"v1"}, e.storedVersions(t, n))
	before := e.snapshot(t, n)

	r := e.deploy(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml", n.marker())}, preflightFlag)
	requireBlocked(t, r)
	requireFinding(t, r.out, "storedVersionRemoval", n.CRD, "v1alpha1", "kapp tools crd-migrate-storage --crd "+n.CRD+" --to v1")
	e.requireUnchanged(t, n, before)

	r = e.migrate(t, "--crd", n.CRD, "--to", "v1", "--method=rewrite", "-y")
	require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
	require.Contains(t, r.out, "without evidence: objects migrated again")
	require.Contains(t, r.out, "4/4 objects done (4 rewritten")

	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/3-v1alpha1-unserved.yaml")}, preflightFlag)
	r = e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml")}, preflightFlag)
	requireNoFinding(t, r.out, "storedVersionRemoval", n.CRD)
	require.Len(t, e.snapshot(t, n).CRs, 4, "every object is still there and readable")
}

// TestWebhookDownCRDStillEstablished: with the webhook registered as
// shipped and its process stopped (failurePolicy Fail), a new CRD still
// becomes Established: the apiserver's controllers write its status
// conditions and storedVersions through customresourcedefinitions/status,
// which the match condition lets by without calling the webhook.
func TestWebhookDownCRDStillEstablished(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	objs := yamlDocs(t, n.render(t, "migrate/1-v1alpha1.yaml"))
	require.Len(t, objs, 1)
	t.Cleanup(func() {
		err := e.dyn.Resource(crdGVR).Delete(tctx(t), n.CRD, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting crd %s: %v", n.CRD, err)
		}
	})
	p := e.startWebhook(t, "")
	e.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
	p.stop(t)

	_, err := e.dyn.Resource(crdGVR).Create(tctx(t), objs[0], metav1.CreateOptions{})
	require.NoError(t, err)
	var conds []any
	require.Eventuallyf(t, func() bool {
		crd, err := e.dyn.Resource(crdGVR).Get(tctx(t), n.CRD, metav1.GetOptions{})
		if err != nil {
			return false
		}
		conds, _, _ = unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "CRD %s not established while the webhook is down: conditions %v", n.CRD, conds)

	// The webhook is down: a spec update is refused (failurePolicy Fail),
	// which shows the registration is in force.
	_, err = e.updateCRD(t, n, "migrate/2-v1-storage.yaml", false, nil)
	require.Error(t, err)
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Real server-side apply clients after the documented version-removal path
// (issue 31, item 7): Flux's apply library (fluxapply, around
// github.com/fluxcd/pkg/ssa as kustomize-controller runs it) and Helm 4,
// both built by hack/ssaclients.sh, beside `kubectl apply --server-side`
// (migrate_ssa_test.go). Each writes the object at v1alpha1 first, then the
// CRD walks release 1 to 4 of docs/migrate.md with the check on, the
// objects migrated by crd-migrate-storage; afterwards each client writes
// the object at v1.

// fluxApplyManager is kustomize-controller's field manager.
const fluxApplyManager = "kustomize-controller"

// walkToV1 deploys release 2 and 3 (v1 storage, v1alpha1 unserved), runs
// crd-migrate-storage with method ("" for auto), and deploys release 4
// (v1alpha1 removed); every deploy with the check on. between runs after
// release 2, while v1alpha1 is still served (nil: nothing).
func (e *env) walkToV1(t *testing.T, n names, method string, between func()) {
	t.Helper()
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/2-v1-storage.yaml")}, preflightFlag)
	if between != nil {
		between()
	}
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/3-v1alpha1-unserved.yaml")}, preflightFlag)
	args := []string{"--crd", n.CRD, "-y"}
	if method != "" {
		args = append(args, "--method="+method)
	}
	r := e.migrate(t, args...)
	require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
	require.Equal(t, []string{"v1"}, e.storedVersions(t, n))
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml")}, preflightFlag)
}

// requireManagedFieldsAt asserts every managedFields entry of the object
// names version and that manager has an Apply entry.
func requireManagedFieldsAt(t *testing.T, obj *unstructured.Unstructured, version, manager string) {
	t.Helper()
	applied := false
	for _, mf := range obj.GetManagedFields() {
		require.Equalf(t, group+"/"+version, mf.APIVersion, "manager %s", mf.Manager)
		applied = applied || (mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply)
	}
	require.Truef(t, applied, "no Apply entry of %s in %v", manager, obj.GetManagedFields())
}

// requireConflictWith asserts that another manager applying spec.color at
// v1 without force conflicts with manager: it still owns the field.
func (e *env) requireConflictWith(t *testing.T, n names, manager string) {
	t.Helper()
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": n.Kind,
		"metadata": map[string]any{"name": "applied", "namespace": "default"}, "spec": map[string]any{"color": "green"}}}
	_, err := e.dyn.Resource(n.gvr("v1")).Namespace("default").Apply(tctx(t), "applied", other, metav1.ApplyOptions{FieldManager: "other"})
	require.Truef(t, apierrors.IsConflict(err), "apply by another manager: %v", err)
	require.Contains(t, err.Error(), `conflict with "`+manager+`"`)
}

// TestMigrateStorageKeepsFluxApplyWorking: an object applied by Flux's
// apply library (kustomize-controller's ResourceManager.ApplyAll, field
// manager kustomize-controller, MigrateAPIVersion off as in
// kustomize-controller by default) at v1alpha1; the documented path with
// each method; then the same apply at v1 succeeds (a dry run and an apply,
// both converting to every managedFields version), Flux still owns its
// fields (a field it stops applying is removed, another manager's change
// is a conflict), and an apply with nothing changed is "unchanged".
func TestMigrateStorageKeepsFluxApplyWorking(t *testing.T) {
	t.Parallel()
	fluxapply := os.Getenv("FLUXAPPLY")
	if fluxapply == "" {
		t.Skip("FLUXAPPLY is not set: the path of fluxapply (Flux's apply library; hack/ssaclients.sh builds it, hack/test-e2e.sh sets it)")
	}
	for _, method := range []string{"rewrite", "auto"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			n := newNames(t)
			e.cleanupApp(t, n.App)
			apply := func(version, color string, size int) (string, error) {
				path := filepath.Join(t.TempDir(), "obj.yaml")
				require.NoError(t, os.WriteFile(path, []byte(ssaObject(n, version, color, size)), 0o600))
				cmd := exec.Command(fluxapply, "--field-manager="+fluxApplyManager, "-f", path)
				cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig)
				out, err := cmd.CombinedOutput()
				t.Logf("$ fluxapply --field-manager=%s -f obj.yaml  # %s/%s, color %s, size %d\n%s",
					fluxApplyManager, group, version, color, size, indent(string(out)))
				return string(out), err
			}
			subject := n.Kind + "/default/applied"

			e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/1-v1alpha1.yaml")}, preflightFlag)
			out, err := untilServed(func() (string, error) { return apply("v1alpha1", "red", 1) })
			require.NoError(t, err, out)
			require.Contains(t, out, subject+" created")

			m := method
			if m == "auto" {
				m = ""
			}
			e.walkToV1(t, n, m, nil)

			// The apply that fails without the managedFields migration
			// (Flux's dry run: "request to convert CR to an invalid group/version").
			out, err = apply("v1", "blue", 0)
			require.NoError(t, err, "Flux's apply after the removal:\n%s", out)
			require.Contains(t, out, subject+" configured")
			obj, err := e.dyn.Resource(n.gvr("v1")).Namespace("default").Get(tctx(t), "applied", metav1.GetOptions{})
			require.NoError(t, err)
			spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
			require.Equal(t, map[string]any{"color": "blue"}, spec,
				"Flux kept ownership of spec.size: the apply that no longer sets it removed it")
			requireManagedFieldsAt(t, obj, "v1", fluxApplyManager)
			e.requireConflictWith(t, n, fluxApplyManager)

			// Drift detection (a server-side dry run) works at v1 too.
			out, err = apply("v1", "blue", 0)
			require.NoError(t, err, out)
			require.Contains(t, out, subject+" unchanged")
		})
	}
}

// helmRun runs a helm ($HELM, or $HELM3) against the test cluster with its own
// Helm homes and, per call, a fresh discovery cache (a cached discovery
// would hide what the apiserver serves now; a CI runner starts without one).
type helmRun struct {
	bin, kubeconfig, home string
}

func newHelm(t *testing.T, e *env) helmRun {
	t.Helper()
	return newHelmOf(t, e, "HELM", "Helm 4's helm (hack/ssaclients.sh builds it, hack/test-e2e.sh sets it)")
}

// newHelm3 is the helm of $HELM3: Helm 3 (webhook_clients_test.go).
func newHelm3(t *testing.T, e *env) helmRun {
	t.Helper()
	return newHelmOf(t, e, "HELM3", "Helm 3's helm (hack/helm3.sh builds it, hack/test-e2e.sh sets it)")
}

// newHelmOf is the helm of the environment variable envVar (what: what it
// is, for the skip message when it is unset).
func newHelmOf(t *testing.T, e *env, envVar, what string) helmRun {
	t.Helper()
	bin := os.Getenv(envVar)
	if bin == "" {
		t.Skip(envVar + " is not set: the path of " + what)
	}
	return helmRun{bin: bin, kubeconfig: e.kubeconfig, home: t.TempDir()}
}

func (h helmRun) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(h.bin, append(args, "--kubeconfig", h.kubeconfig)...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"HELM_DATA_HOME="+filepath.Join(h.home, "data"),
		"KUBECACHEDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("$ helm %s\n%s", strings.Join(args, " "), indent(string(out)))
	return string(out), err
}

// upgrade runs `helm upgrade --install` of the test chart (the object
// "applied" of kind n.Kind) with the object at version and spec.color
// color (and spec.size 1, or none with size 0).
func (h helmRun) upgrade(t *testing.T, n names, chart, version, color string, size int) (string, error) {
	t.Helper()
	return h.run(t, "upgrade", "--install", n.App, chart, "--namespace", "default",
		"--set", "version="+version, "--set", "color="+color, "--set", "size="+strconv.Itoa(size))
}

// helmChart writes the test chart (testdata/migrate/chart) with the test's
// kind into a directory and deletes the release's records (Secrets) when
// the test ends: `helm uninstall` cannot, once the stored manifest names a
// removed version, and the CRD's deletion removes the object anyway.
func (e *env) helmChart(t *testing.T, n names) string {
	t.Helper()
	files := map[string][]byte{}
	for _, f := range []string{"Chart.yaml", "values.yaml", "templates/thing.yaml"} {
		files[f] = n.render(t, filepath.Join("migrate/chart", f))
	}
	t.Cleanup(func() {
		err := e.core.CoreV1().Secrets("default").DeleteCollection(tctx(t), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: "owner=helm,name=" + n.App})
		if err != nil {
			t.Errorf("cleanup: deleting the Secrets of release %s: %v", n.App, err)
		}
	})
	return dir(t, files)
}

// TestHelmReleaseAcrossVersionRemoval: a Helm 4 release (server-side
// apply, field manager helm) whose chart templates the object, installed
// at v1alpha1. Helm keeps the manifest it applied and maps its kinds
// through the cluster's discovery on every upgrade, so the order matters:
//
//   - upgraded once with the object at v1 while v1alpha1 is still served
//     (between release 2 and 3), the documented path then leaves a release
//     that `helm upgrade` at v1 keeps writing, with Helm's ownership;
//   - not upgraded before, every `helm upgrade` fails once v1alpha1 is
//     unserved, and still after its removal, before it sends anything:
//     "unable to build kubernetes objects from current release manifest".
func TestHelmReleaseAcrossVersionRemoval(t *testing.T) {
	t.Parallel()
	t.Run("upgraded-while-served", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		h := newHelm(t, e)
		n := newNames(t)
		e.cleanupApp(t, n.App)
		chart := e.helmChart(t, n)

		e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/1-v1alpha1.yaml")}, preflightFlag)
		out, err := untilServed(func() (string, error) { return h.upgrade(t, n, chart, "v1alpha1", "red", 1) })
		require.NoError(t, err, out)

		e.walkToV1(t, n, "", func() {
			// The upgrade that moves the release's manifest to v1.
			out, err := h.upgrade(t, n, chart, "v1", "red", 1)
			require.NoError(t, err, out)
		})

		out, err = h.upgrade(t, n, chart, "v1", "blue", 0)
		require.NoError(t, err, "helm upgrade after the removal:\n%s", out)
		obj, err := e.dyn.Resource(n.gvr("v1")).Namespace("default").Get(tctx(t), "applied", metav1.GetOptions{})
		require.NoError(t, err)
		spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
		require.Equal(t, map[string]any{"color": "blue"}, spec,
			"Helm kept ownership of spec.size: the upgrade that no longer sets it removed it")
		requireManagedFieldsAt(t, obj, "v1", "helm")
		e.requireConflictWith(t, n, "helm")
	})

	t.Run("upgraded-after-removal", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		h := newHelm(t, e)
		n := newNames(t)
		e.cleanupApp(t, n.App)
		chart := e.helmChart(t, n)
		noMatch := `no matches for kind "` + n.Kind + `" in version "` + group + `/v1alpha1"`

		e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/1-v1alpha1.yaml")}, preflightFlag)
		out, err := untilServed(func() (string, error) { return h.upgrade(t, n, chart, "v1alpha1", "red", 1) })
		require.NoError(t, err, out)
		e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/2-v1-storage.yaml")}, preflightFlag)
		e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/3-v1alpha1-unserved.yaml")}, preflightFlag)

		// Already once v1alpha1 is unserved: discovery lists served versions only.
		out, err = h.upgrade(t, n, chart, "v1", "blue", 0)
		require.Error(t, err, out)
		require.Contains(t, out, "unable to build kubernetes objects from current release manifest")
		require.Contains(t, out, noMatch)

		r := e.migrate(t, "--crd", n.CRD, "-y")
		require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
		e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml")}, preflightFlag)

		before, err := e.dyn.Resource(n.gvr("v1")).Namespace("default").Get(tctx(t), "applied", metav1.GetOptions{})
		require.NoError(t, err)
		out, err = h.upgrade(t, n, chart, "v1", "blue", 0)
		require.Error(t, err, out)
		require.Contains(t, out, "UPGRADE FAILED: unable to build kubernetes objects from current release manifest")
		require.Contains(t, out, noMatch)
		after, err := e.dyn.Resource(n.gvr("v1")).Namespace("default").Get(tctx(t), "applied", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, before.GetResourceVersion(), after.GetResourceVersion(), "the failed upgrade wrote the object")
		spec, _, _ := unstructured.NestedMap(after.Object, "spec")
		require.Equal(t, map[string]any{"color": "red", "size": int64(1)}, spec)
	})
}

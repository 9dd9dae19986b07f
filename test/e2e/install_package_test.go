package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var (
	packageRepositoryGVR = schema.GroupVersionResource{Group: "packaging.carvel.dev", Version: "v1alpha1", Resource: "packagerepositories"}
	packageInstallGVR    = schema.GroupVersionResource{Group: "packaging.carvel.dev", Version: "v1alpha1", Resource: "packageinstalls"}
)

const (
	// packageRefName is the package's refName (carvel-package/package.yaml).
	packageRefName = "crd-upgrade-safety-webhook.kapp.k14s.io"
	// e2ePackageVersion is the version of the bundles the test pushes.
	e2ePackageVersion = "v0.0.0-e2e"
)

// TestInstallCarvelPackage: the real kapp-controller v0.51.0 installs the
// webhook's Carvel package from a registry on loopback: the package
// repository bundle and the package bundle, built by the code that builds
// a release's (release-image package-repository), pushed to the registry
// of hack/pkgrepo.sh with a small image standing in for the webhook's; a
// PackageRepository fetches the repository (imgpkg, ytt, kbld, kapp), a
// PackageInstall installs the package with values for the certificate
// source (the loopback server's certificate, given), the settings and the
// URL of the loopback server. The installed Deployment names the image by
// the digest of the bundle's images.yml, kapp applied the registration
// only once the Deployment was ready, and the installed registration
// refuses an unsafe CRD update and allows a safe one. Deleting the
// PackageInstall removes everything, the registration first.
func TestInstallCarvelPackage(t *testing.T) {
	t.Parallel()
	k := kcSetup(t)
	reg := startRegistry(t)
	e, n := baseApp(t)

	// The bundles, as a release builds them, into the loopback registry.
	image := reg.run(t, "stand-in-image", "-push", reg.host+"/crdsafety/kapp:"+e2ePackageVersion)
	image = strings.TrimSpace(image)
	imageDigest := image[strings.Index(image, "@")+1:]
	out := reg.run(t, "package-repository", "-version", e2ePackageVersion, "-package-dir", "carvel-package",
		"-image-repo", reg.host+"/crdsafety/kapp", "-image-digest", imageDigest,
		"-bundle-repo", reg.host+"/crdsafety/kapp-webhook-package", "-repository-repo", reg.host+"/crdsafety/kapp-package-repository", "-push")
	t.Logf("pushed:\n%s%s", indent(image+"\n"), indent(out))

	// The server the installed registration calls, and the values.
	p := e.startWebhook(t, "mode: error\nfailMode: closed\n")
	b := make([]byte, 3)
	_, err := rand.Read(b)
	require.NoError(t, err)
	ns := fmt.Sprintf("e2e-pkg-%x", b)
	values := installValues(p, ns, n.App, "error")
	values["namespace"] = ns
	valuesYAML, err := yaml.Marshal(values)
	require.NoError(t, err)
	e.labelCRD(t, n, installSelectorLabel, n.App)
	e.deleteRegistrationOnFailure(t, ns)
	e.standInForKubelet(t, ns)

	// Cleanups run last first: the PackageInstall is deleted (and the
	// install with it) before the PackageRepository, the webhook and the
	// CRD's App.
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "packaging.carvel.dev/v1alpha1", "kind": "PackageRepository",
		"metadata": map[string]any{"name": ns, "namespace": kcNamespace},
		"spec": map[string]any{"fetch": map[string]any{"imgpkgBundle": map[string]any{
			"image": reg.host + "/crdsafety/kapp-package-repository:" + e2ePackageVersion}}},
	}}
	k.createDeleted(t, packageRepositoryGVR, repo)
	k.waitReconciled(t, packageRepositoryGVR, kcNamespace, ns, kcConditionSucceeded)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ns + "-values", Namespace: kcNamespace},
		StringData: map[string]string{"values.yaml": string(valuesYAML)}}
	_, err = e.core.CoreV1().Secrets(kcNamespace).Create(tctx(t), secret, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = e.core.CoreV1().Secrets(kcNamespace).Delete(context.Background(), secret.Name, metav1.DeleteOptions{})
	})
	pkgi := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "packaging.carvel.dev/v1alpha1", "kind": "PackageInstall",
		"metadata": map[string]any{"name": ns, "namespace": kcNamespace},
		"spec": map[string]any{
			"serviceAccountName": kcServiceAccount,
			"packageRef": map[string]any{"refName": packageRefName, "versionSelection": map[string]any{
				"constraints": strings.TrimPrefix(e2ePackageVersion, "v"), "prereleases": map[string]any{}}},
			"values": []any{map[string]any{"secretRef": map[string]any{"name": secret.Name}}},
		},
	}}
	k.createDeleted(t, packageInstallGVR, pkgi)
	k.waitReconciled(t, packageInstallGVR, kcNamespace, ns, kcConditionSucceeded)

	// What was installed: the image by the digest of the bundle's
	// images.yml (kbld), the settings, the registration at the URL.
	dep, err := e.core.AppsV1().Deployments(ns).Get(tctx(t), ns+"-webhook", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, image, dep.Spec.Template.Spec.Containers[0].Image, "the Deployment's image is not the bundle's, by digest")
	require.Equal(t, int32(2), *dep.Spec.Replicas)
	_, err = e.core.PolicyV1().PodDisruptionBudgets(ns).Get(tctx(t), ns+"-webhook", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"mode": "error", "failMode": "closed"}, e.settingsOf(t, ns))
	vwc := e.registration(t, ns)
	require.NotNil(t, vwc, "no registration")
	require.Equal(t, p.url(), *vwc.Webhooks[0].ClientConfig.URL)
	// kapp's deploy log (the App of the PackageInstall): the registration
	// was created after the Deployment was reconciled (ready).
	app, err := e.dyn.Resource(appGVR).Namespace(kcNamespace).Get(tctx(t), ns, metav1.GetOptions{})
	require.NoError(t, err)
	st, ok := reconciledStatus(app)
	require.True(t, ok)
	ready := strings.Index(st.DeployStdout, "ok: reconcile deployment/"+ns+"-webhook")
	created := strings.Index(st.DeployStdout, "create validatingwebhookconfiguration/"+ns)
	require.Truef(t, ready >= 0 && created > ready, "kapp did not create the registration after the Deployment was ready:\n%s", st.DeployStdout)

	e.requireInstalledWebhookJudges(t, n, p)

	// Uninstall: kapp deletes the registration before the server.
	e.requireRemovedInOrder(t, ns, "PackageInstall", func() { k.deleteWait(t, packageInstallGVR, kcNamespace, ns) })
}

// createDeleted creates obj and deletes it (waiting until it is gone) when
// the test ends.
func (k *kcEnv) createDeleted(t *testing.T, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	t.Helper()
	_, err := k.dyn.Resource(gvr).Namespace(obj.GetNamespace()).Create(tctx(t), obj, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { k.deleteWait(t, gvr, obj.GetNamespace(), obj.GetName()) })
}

// deleteWait deletes a kapp-controller object and waits until the
// controller has finalized it (deleted what it installed).
func (k *kcEnv) deleteWait(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcReconcileTimeout)
	defer cancel()
	err := k.dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("deleting %s %s/%s: %v", gvr.Resource, ns, name, err)
		return
	}
	for {
		_, err := k.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("%s %s/%s still exists %s after its deletion%s", gvr.Resource, ns, name, kcReconcileTimeout, k.logTail(name))
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

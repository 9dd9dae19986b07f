// Package e2e drives the built kapp binary against a real control plane
// (kube-apiserver, kube-controller-manager and etcd of hack/cluster.sh, in
// each supported Kubernetes version) and checks what the CRDUpgradeSafety
// preflight check does to a cluster: what it lets through, what it blocks,
// and that a blocked deploy leaves the cluster exactly as it was.
//
// The tests read these environment variables:
//
//	KAPP_E2E_BINARY  path of the kapp binary under test (bin/kapp)
//	KUBECONFIG       admin kubeconfig of the cluster (.cache/cluster/kubeconfig)
//	KUBE_VERSION     the cluster's Kubernetes version (1.37, 1.35): a test that
//	                 needs a newer one skips and says why (requireKubeVersion);
//	                 without it, the apiserver's own version
//	KUBECTL          the kubectl of that version, for the tests that run one
//	HELM             Helm 4's helm, and
//	FLUXAPPLY        a program applying with Flux's apply library, for the
//	                 tests of real server-side apply clients (hack/ssaclients.sh
//	                 builds both)
//	HELM3            Helm 3's helm, for the tests of real clients against the
//	                 webhook (hack/helm3.sh builds it)
//	PKGREPO_TOOL     release-image of hack/release (hack/pkgrepo.sh builds it):
//	                 the registry on loopback and the bundles of the Carvel
//	                 package's test (TestInstallCarvelPackage)
//	CONVWEBHOOK_DIR  the folder of the three builds of a controller-runtime
//	                 conversion webhook (lossless, lossy, failing;
//	                 hack/convwebhook.sh builds them), for the tests of
//	                 conversion (conversion_*_test.go)
//
// The tests of the installs (install_*_test.go) render the package with the
// ytt of hack/kapp-controller.sh (KAPPCTRL_E2E_YTT, else
// .cache/kappctrl/bin/ytt) and the chart with $HELM (else
// .cache/ssaclients/bin/helm).
//
// Without the first two the tests skip, except under CI=true, where they
// fail; without one of the others, the tests that need it skip. hack/test.sh
// and hack/test-e2e.sh set them all.
package e2e

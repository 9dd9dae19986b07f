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
//
// Without the first two the tests skip, except under CI=true, where they
// fail. hack/test.sh and hack/test-e2e.sh set all four.
package e2e

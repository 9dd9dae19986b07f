// Package e2e drives the built kapp binary against a real kube-apiserver and
// etcd (see hack/cluster.sh) and checks what the CRDUpgradeSafety preflight
// check does to a cluster: what it lets through, what it blocks, and that a
// blocked deploy leaves the cluster exactly as it was.
//
// The tests read two environment variables:
//
//	KAPP_E2E_BINARY  path of the kapp binary under test (bin/kapp)
//	KUBECONFIG       admin kubeconfig of the cluster (.cache/cluster/kubeconfig)
//
// Without them the tests skip, except under CI=true, where they fail.
// hack/test.sh and hack/test-e2e.sh set both.
package e2e

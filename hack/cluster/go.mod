// Module cluster holds clusterutil, the small helper program of
// hack/cluster.sh. The control planes are built by the modules of the
// subdirectories, one per Kubernetes version (k8s-1.35, k8s-1.37), each its
// own module so that their dependency pins do not mix.
module github.com/crdsafety/kapp/hack/cluster

go 1.26.0

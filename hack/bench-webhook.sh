#!/usr/bin/env bash
# bench-webhook.sh is the admission webhook's load benchmark (issue 25 item
# 5): reviews of an update of the largest real CRD of the tests
# (prometheus-operator's prometheuses, ~0.8 MB, with a safe change) are
# posted to the webhook's server (the code `kapp tools
# crd-upgrade-safety-webhook` runs) over TLS on loopback, as the apiserver
# posts them (HTTP/1.1, ?timeout=10s), 1, 10 and 50 at a time. It prints per
# concurrency the p50, p99 and slowest review latency and the throughput:
#
#   1. with no stored custom resources (no cluster needed): the cost of
#      decoding and comparing; target p99 < 1 s at 10 concurrent reviews;
#   2. with OBJECTS (10,000) stored custom resources of the CRD on a real
#      cluster, which every review lists and validates (existingResources):
#      target p99 under the default admission timeout (10 s). The cluster is
#      the one of KUBECONFIG when set, else the local cluster of
#      hack/cluster.sh (its own state in .cache/bench-webhook-cluster,
#      started and stopped here).
#
# Usage: hack/bench-webhook.sh
# Environment: OBJECTS=10000 (0: only the first part) DURATION=10s (per
# concurrency) CONCURRENCY=1,10,50 KUBECONFIG= (a cluster to use)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
crd=.cache/crds/prometheus-operator/monitoring.coreos.com_prometheuses.yaml

# shellcheck source=lib/bench.sh
source hack/lib/bench.sh
bench_prepare bench-webhook "$crd"

flags=(-crd "$crd" -duration "${DURATION:-10s}" -concurrency "${CONCURRENCY:-1,10,50}")
# The garbage collector's settings of examples/webhook/deployment.yaml.
export GOGC="${GOGC:-400}" GOMEMLIMIT="${GOMEMLIMIT:-800MiB}"
echo "== without stored custom resources"
"$scale" webhook "${flags[@]}"

objects="${OBJECTS:-10000}"
[[ "$objects" != 0 ]] || exit 0
echo
echo "== with $objects stored custom resources"
kubeconfig="${KUBECONFIG:-}"
pids=()
if [[ -z "$kubeconfig" ]]; then
  export CLUSTER_STATE_DIR="$root/.cache/bench-webhook-cluster"
  trap 'hack/cluster.sh stop >&2' EXIT
  hack/cluster.sh start >&2
  kubeconfig="$CLUSTER_STATE_DIR/kubeconfig"
  # shellcheck disable=SC1091
  pids=(-cluster-pids "$(source "$CLUSTER_STATE_DIR/cluster.env" && echo "$APISERVER_PID,$ETCD_PID")")
fi
"$scale" webhook "${flags[@]}" -kubeconfig "$kubeconfig" -objects "$objects" "${pids[@]}"

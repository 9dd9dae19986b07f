#!/usr/bin/env bash
# bench-deploy.sh measures the CRDUpgradeSafety preflight check in a deploy
# at scale, against the local cluster of hack/cluster.sh (its own state in
# .cache/bench-deploy-cluster, started and stopped here): an app of 300
# realistic CRDs (the real CRDs of .cache/crds, cycled, each in its own
# group) and 5,000 custom resources (minimal valid objects per schema) is
# deployed, then every CRD is upgraded with a safe change, with the check
# and without, each time from the same state. It prints the deploy times,
# the check's own time (KAPP_CRD_UPGRADE_SAFETY_TIMING), the API requests
# the apiserver counted, kapp's peak RSS, the bytes the check allocated and the
# garbage collections they caused; its last line is
# `preflight share: N%` (the check's time over the deploy's; target < 20%).
#
# Usage: hack/bench-deploy.sh
# Environment: CRDS=300 CRS=5000 ROUNDS=3 PROFILE= (a file: CPU profile of
# the first deploy with the check, for go tool pprof)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CLUSTER_STATE_DIR="$root/.cache/bench-deploy-cluster"

# shellcheck source=lib/bench.sh
source hack/lib/bench.sh
bench_prepare bench-deploy .cache/crds/prometheus-operator/monitoring.coreos.com_prometheuses.yaml .cache/crds/cluster-api/new

trap 'hack/cluster.sh stop >&2' EXIT
hack/cluster.sh start >&2
# shellcheck disable=SC1091
pids="$(source "$CLUSTER_STATE_DIR/cluster.env" && echo "$APISERVER_PID,$ETCD_PID")"
echo "bench-deploy: load $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)" >&2
# Each measured deploy waits for the apiserver and etcd to settle (the
# apiserver rebuilds the OpenAPI documents of changed CRDs in the
# background): until their CPU use is under 5% of a core or stops falling
# (scale/settle.go), which it prints. PROFILE=FILE writes a CPU profile of the first deploy with
# the check.
"$scale" deploy -kapp bin/kapp -kubeconfig "$CLUSTER_STATE_DIR/kubeconfig" -crds .cache/crds \
  -work .cache/bench/deploy -n "${CRDS:-300}" -crs "${CRS:-5000}" -rounds "${ROUNDS:-3}" \
  -settle "$pids" -profile "${PROFILE:-}"

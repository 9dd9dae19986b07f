#!/usr/bin/env bash
# bench-live.sh measures the existingResources live check on many custom
# resources, against the local cluster of hack/cluster.sh (its own state in
# .cache/bench-live-cluster, started and stopped here): a real CRD
# (cert-manager's certificates, in its own group) gets 10,000 then 100,000
# custom resources, created through the API in bulk, concurrently (not with
# kapp); at each count `kapp tools crd-upgrade-safety --file2 NEW` (the CRD
# with a safe change) checks them all. It prints per count the
# existingResources time (the check's timing line,
# KAPP_CRD_UPGRADE_SAFETY_TIMING) and kapp's peak RSS, and how both grew:
# time linearly, memory flat (pages and batches of 2,000 objects).
#
# Usage: hack/bench-live.sh
# Environment: COUNTS=10000,100000 RUNS=3 CRD=.cache/crds/cert-manager/cert-manager.io_certificates.yaml
#   REMOVE_VERSION=1  also measures an update that removes an unserved version (the managedFields
#                 list and the ownerReferences read of every object's metadata), runs alternating
#   BASELINE=REV  also measures kapp built at git revision REV (in a worktree under .cache/bench),
#                 on the same objects, runs alternating, and prints the ratios
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CLUSTER_STATE_DIR="$root/.cache/bench-live-cluster"

# shellcheck source=lib/bench.sh
source hack/lib/bench.sh
bench_prepare bench-live .cache/crds/cert-manager

trap 'hack/cluster.sh stop >&2' EXIT
hack/cluster.sh start >&2
echo "bench-live: load $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)" >&2
baseline=()
if [[ -n "${BASELINE:-}" ]]; then
  wt="$root/.cache/bench/baseline-src"
  rm -rf "$wt" && git worktree prune
  git worktree add -q --detach "$wt" "$BASELINE"
  echo "bench-live: building the baseline kapp at $BASELINE" >&2
  (cd "$wt" && go build -o "$root/.cache/bench/kapp-baseline" ./cmd/kapp)
  git worktree remove --force "$wt"
  baseline=(-baseline "$root/.cache/bench/kapp-baseline")
fi
"$scale" live -kapp bin/kapp "${baseline[@]}" -kubeconfig "$CLUSTER_STATE_DIR/kubeconfig" \
  -crd "${CRD:-.cache/crds/cert-manager/cert-manager.io_certificates.yaml}" -work .cache/bench/live \
  -counts "${COUNTS:-10000,100000}" -runs "${RUNS:-3}" ${REMOVE_VERSION:+-remove-version}

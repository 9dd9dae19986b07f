#!/usr/bin/env bash
# bench-webhook.sh is the admission webhook's load benchmark (issue 25 item
# 5, issue 32 item 1): reviews of CRD updates are posted to the webhook's
# server (the code `kapp tools crd-upgrade-safety-webhook` runs, in a
# process of its own) over TLS on loopback, as the apiserver posts them
# (HTTP/1.1, ?timeout=10s). It prints per run the p50, p99 and slowest
# review latency, the throughput and the CPU (user+sys) of the server
# process per review (and of the apiserver and etcd, with stored objects):
#
#   1. the largest real CRD of the tests (prometheus-operator's
#      prometheuses, ~0.8 MB, with a safe change) without stored custom
#      resources (no cluster needed), 1, 10 and 50 reviews at a time, then
#      10 at a time with every review's old CRD of its own (-cold: nothing
#      shared between reviews). Target: p99 <= 100 ms at 10 concurrent;
#   2. the same CRD with OBJECTS (10,000) stored custom resources on a real
#      cluster, which every review lists and validates (existingResources),
#      10 reviews at a time. Target: p99 <= 2 s;
#   3. an operator upgrade: the 10 largest real CRDs of hack/fetch-crds.sh's
#      set (distinct names) with BURST_OBJECTS (1,000) stored custom
#      resources each, all 10 updated at once (one review per CRD in flight,
#      in rounds), every review with an old CRD of its own. Target:
#      p99 <= 1 s.
#
# With BASELINE=<git ref>, every run is made twice, side by side: against
# the webhook of this tree, then of the ref (the scale tool of this tree
# built against a temporary `git worktree` of the ref, whose server runs
# the same way), e.g. BASELINE=74131aa.
#
# The cluster is the one of KUBECONFIG when set, else the local cluster of
# hack/cluster.sh (its own state in CLUSTER_STATE_DIR, by default
# .cache/bench-webhook-cluster, started and stopped here).
#
# Measured on November 26, 2026, 14:11-14:18 UTC (the 2-core machine
# quiet: load average 0.4 to 3.4), BASELINE=74131aa CONCURRENCY=10, twice;
# p50 / p99 / webhook CPU per review (+ apiserver and etcd), first run,
# then the p99 of the second:
#
#   run                             74131aa                    this tree
#   1. no objects, 10 at once       166ms / 289ms / 31.8ms     13.2ms / 72.6ms / 2.75ms
#      (second run p99)             243ms                      67.5ms
#      10 at once, -cold            227ms / 503ms / 32.6ms     87.6ms / 275ms / 9.79ms
#      (second run p99)             349ms                      173ms
#   2. 10,000 objects, 10 at once   3.01s / 4.22s / 457+204ms  626ms / 748ms / 71+39ms
#      (second run p99)             4.13s                      749ms
#   3. burst, 1,000 objects each    379ms / 867ms / 110+33ms   299ms / 686ms / 70+35ms
#      (second run p99)             979ms                      754ms
#
# Targets (p99): 1. 100ms, 2. 2s, 3. 1s: all met in both runs.
#
# What the targets need and the floor of each: docs/webhook.md, "Performance".
#
# Usage: hack/bench-webhook.sh
# Environment: BASELINE= (a git ref) OBJECTS=10000 (0: only the first part)
# BURST_OBJECTS=1000 (0: no burst) DURATION=10s (per run)
# CONCURRENCY=1,10,50 KUBECONFIG= (a cluster to use)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
crd=.cache/crds/prometheus-operator/monitoring.coreos.com_prometheuses.yaml

# shellcheck source=lib/bench.sh
source hack/lib/bench.sh
bench_prepare bench-webhook "$crd"

cleanup=()
trap 'for c in "${cleanup[@]}"; do eval "$c"; done' EXIT

# servers: "label binary" of each webhook measured.
servers=("this tree|$scale")
if [[ -n "${BASELINE:-}" ]]; then
  base="$(git rev-parse --short "$BASELINE^{commit}")"
  tmp="$(mktemp -d)"
  cleanup+=("git -C '$root' worktree remove --force '$tmp/wt' >/dev/null 2>&1 || true; rm -rf '$tmp'")
  echo "bench-webhook: building the webhook of $base from a temporary worktree" >&2
  git worktree add --detach --quiet "$tmp/wt" "$base"
  # The scale tool of this tree (the same load, the same server code
  # around the webhook package) against the packages of the baseline.
  rm -rf "$tmp/wt/hack/bench"
  cp -r hack/bench "$tmp/wt/hack/bench"
  (cd "$tmp/wt/hack/bench" && go build -o "$tmp/scale" ./scale)
  servers+=("$base|$tmp/scale")
fi

# run ARGS...: the benchmark of each server with ARGS.
run() {
  local s
  for s in "${servers[@]}"; do
    "$scale" webhook -server "${s#*|}" -label "${s%%|*}" "$@"
    echo
  done
}

flags=(-crd "$crd" -duration "${DURATION:-10s}")
# The garbage collector's settings of examples/webhook/deployment.yaml.
export GOGC="${GOGC:-400}" GOMEMLIMIT="${GOMEMLIMIT:-800MiB}"
echo "== 1. without stored custom resources"
run "${flags[@]}" -concurrency "${CONCURRENCY:-1,10,50}"
run "${flags[@]}" -concurrency 10 -cold

objects="${OBJECTS:-10000}" burst="${BURST_OBJECTS:-1000}"
[[ "$objects" != 0 || "$burst" != 0 ]] || exit 0
kubeconfig="${KUBECONFIG:-}"
pids=()
if [[ -z "$kubeconfig" ]]; then
  export CLUSTER_STATE_DIR="${CLUSTER_STATE_DIR:-$root/.cache/bench-webhook-cluster}"
  cleanup+=("hack/cluster.sh stop >&2")
  hack/cluster.sh start >&2
  kubeconfig="$CLUSTER_STATE_DIR/kubeconfig"
  # shellcheck disable=SC1091
  pids=(-cluster-pids "$(source "$CLUSTER_STATE_DIR/cluster.env" && echo "$APISERVER_PID,$ETCD_PID")")
fi
if [[ "$objects" != 0 ]]; then
  echo "== 2. with $objects stored custom resources"
  run "${flags[@]}" -concurrency 10 -kubeconfig "$kubeconfig" -objects "$objects" "${pids[@]}"
fi
if [[ "$burst" != 0 ]]; then
  echo "== 3. an operator upgrade: the 10 largest CRDs updated at once, $burst stored custom resources each"
  run -burst 10 -cold -duration "${DURATION:-10s}" -kubeconfig "$kubeconfig" -objects "$burst" "${pids[@]}"
fi

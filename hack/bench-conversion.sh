#!/usr/bin/env bash
# bench-conversion.sh measures the conversion probe beside the cost of one
# LIST of the same number of objects (issue 39, item 6; the design's bound:
# a probe costs no more than one LIST plus the apiserver's ~4 ms per
# object). On the local cluster of hack/cluster.sh (its own state dir,
# started and stopped here), `scale list` (module hack/bench) creates 1,000
# then 10,000 widgets (the fields of BenchmarkProbe's) and times one LIST of
# all of them, in pages of 2,000 (kapp's page size) and unpaged; then, with
# the cluster stopped, `go test -bench BenchmarkProbe` probes as many
# objects through a lossless webhook on loopback. It prints both tables.
# Time-bounded: each step is killed after LIMIT seconds.
#
# Usage: hack/bench-conversion.sh
# Environment: COUNTS=1000,10000 RUNS=3 LIMIT=900 KUBE_VERSION=1.37
#   CLUSTER_STATE_DIR (default .cache/bench-conversion-cluster)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CLUSTER_STATE_DIR="${CLUSTER_STATE_DIR:-$root/.cache/bench-conversion-cluster}"
limit="${LIMIT:-900}"
runs="${RUNS:-3}"

echo "bench-conversion: building the scale tool" >&2
scale="$root/.cache/bench/scale"
mkdir -p "$(dirname "$scale")"
(cd hack/bench && go build -o "$scale" ./scale)

trap 'hack/cluster.sh stop >&2' EXIT
hack/cluster.sh start >&2
echo "bench-conversion: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), load $(cut -d' ' -f1-3 /proc/loadavg), Kubernetes ${KUBE_VERSION:-1.37}" >&2
echo "== one LIST of the objects"
timeout "$limit" "$scale" list -kubeconfig "$CLUSTER_STATE_DIR/kubeconfig" -counts "${COUNTS:-1000,10000}" -runs "$runs"
hack/cluster.sh stop >&2
trap - EXIT

echo "== the conversion probe of as many objects (BenchmarkProbe)"
echo "bench-conversion: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
timeout "$limit" go test -run XXX -bench BenchmarkProbe -benchtime=1x -count "$runs" ./pkg/kapp/conversion/ |
  grep -E '^Benchmark|^(goos|goarch|cpu):'

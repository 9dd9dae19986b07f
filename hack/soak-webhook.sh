#!/usr/bin/env bash
# soak-webhook.sh is the admission webhook's soak test (issue 32 item 6): for
# DURATION, two servers of bin/kapp's `tools crd-upgrade-safety-webhook` (one
# under failMode closed, one under open; the install's GOGC and GOMEMLIMIT)
# judge a steady RATE of mixed reviews, posted as the apiserver posts them
# (over TLS, ?timeout=10s, a new connection per review): safe and unsafe
# updates and a delete of a CRD with OBJECTS custom resources on a real
# cluster (examples/crd-upgrade's widgets), and malformed reviews. A third of
# the way through, the serving certificate is renewed (a new leaf of the same
# CA over the files the servers read, as cert-manager renews a Secret); two
# thirds of the way, the cluster's kube-apiserver is killed (SIGKILL), kept
# down for DOWN and started again (hack/cluster.sh stop-apiserver,
# start-apiserver).
#
# It prints, every INTERVAL, each server's RSS and goroutines (they should
# stay flat), and at the end: reviews sent and answered, those answered after
# their deadline, the verdicts by the apiserver's state (up: the findings;
# down: failMode closed denies, open allows with a warning; the moments of
# the kill and of the start accept either), the TLS handshake failures (0
# across the renewal). It exits non-zero when a review was not answered
# within its deadline, a verdict was wrong or a handshake failed. The load
# driver is hack/bench/scale's `soak` mode (hack/bench/scale/soak.go).
#
# The cluster: hack/cluster.sh with its own CLUSTER_STATE_DIR (default
# .cache/soak-webhook-cluster), started and stopped here.
#
# Usage: hack/soak-webhook.sh
# Environment: DURATION=30m RATE=10 (reviews/s in all) OBJECTS=200 DOWN=20s
# INTERVAL=1m KUBE_VERSION=1.37 CLUSTER_STATE_DIR=
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "soak-webhook: building bin/kapp and the load driver (bin/scale)" >&2
hack/build.sh >/dev/null
(cd hack/bench && go build -o "$root/bin/scale" ./scale)

export CLUSTER_STATE_DIR="${CLUSTER_STATE_DIR:-$root/.cache/soak-webhook-cluster}"
export KUBE_VERSION="${KUBE_VERSION:-1.37}"
trap 'hack/cluster.sh stop >&2' EXIT
hack/cluster.sh start >&2

bin/scale soak -kapp bin/kapp -kubeconfig "$CLUSTER_STATE_DIR/kubeconfig" -cluster-script hack/cluster.sh \
  -duration "${DURATION:-30m}" -rate "${RATE:-10}" -objects "${OBJECTS:-200}" -down "${DOWN:-20s}" \
  -interval "${INTERVAL:-1m}"

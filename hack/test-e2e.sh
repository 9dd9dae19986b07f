#!/usr/bin/env bash
# End-to-end tests: builds bin/kapp, starts the local cluster of
# hack/cluster.sh (etcd + kube-apiserver from source), runs test/e2e against
# it and stops it again. A cluster already started with `hack/cluster.sh
# start` is reused and left running, which makes reruns fast.
#
# Usage: hack/test-e2e.sh [go test flags, e.g. -run TestFailMode -v]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

section() { printf '\n==> %s\n' "$*"; }

section "build kapp"
if [[ -x hack/build.sh ]]; then
  hack/build.sh
else
  # hack/build.sh is the build of record; until it exists, build the same binary directly.
  go build -o bin/kapp ./cmd/kapp
fi
[[ -x bin/kapp ]] || {
  echo "bin/kapp was not built" >&2
  exit 1
}

section "start the cluster"
started=false
if hack/cluster.sh status >/dev/null 2>&1; then
  echo "reusing the running cluster (hack/cluster.sh stop to stop it)"
else
  started=true
  cleanup() {
    local rc=$?
    if [[ $rc -ne 0 && -d .cache/cluster/logs ]]; then
      echo "--- last lines of the apiserver log (.cache/cluster/logs) ---" >&2
      tail -n 20 .cache/cluster/logs/kube-apiserver.log >&2 || true
    fi
    hack/cluster.sh stop
    exit "$rc"
  }
  trap cleanup EXIT
  hack/cluster.sh start
fi

section "e2e tests"
KAPP_E2E_BINARY="$ROOT/bin/kapp" KUBECONFIG="$ROOT/.cache/cluster/kubeconfig" \
  go test ./test/e2e/... -count=1 -parallel 8 -timeout 20m "$@"

if ! $started; then
  echo "the cluster is still running"
fi

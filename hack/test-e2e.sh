#!/usr/bin/env bash
# End-to-end tests: builds bin/kapp, starts the local cluster of
# hack/cluster.sh (etcd + kube-apiserver from source), runs test/e2e against
# it and stops it again. A cluster already started with `hack/cluster.sh
# start` is reused and left running, which makes reruns fast.
#
# With --kapp-controller it also builds and starts kapp-controller
# (hack/kapp-controller.sh, with bin/kapp and the settings file
# test/e2e/testdata/kappctrl/controller-settings.yaml as
# KAPP_CRD_UPGRADE_SAFETY_CONFIG) for the TestKappController* tests, which
# skip without it. A kapp-controller already running is reused likewise.
#
# Usage: hack/test-e2e.sh [--kapp-controller] [go test flags, e.g. -run TestFailMode -v]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

kapp_controller=false
if [[ "${1:-}" == "--kapp-controller" ]]; then
  kapp_controller=true
  shift
fi

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

# Stopped in reverse order on exit: kapp-controller (after the tests have
# deleted their Apps), then the cluster; only what this run started.
started_cluster=false started_controller=false
cleanup() {
  local rc=$?
  if $started_controller; then
    hack/kapp-controller.sh stop
  fi
  if $started_cluster; then
    if [[ $rc -ne 0 && -d .cache/cluster/logs ]]; then
      echo "--- last lines of the apiserver log (.cache/cluster/logs) ---" >&2
      tail -n 20 .cache/cluster/logs/kube-apiserver.log >&2 || true
    fi
    hack/cluster.sh stop
  fi
  exit "$rc"
}
trap cleanup EXIT

section "start the cluster"
if hack/cluster.sh status >/dev/null 2>&1; then
  echo "reusing the running cluster (hack/cluster.sh stop to stop it)"
else
  started_cluster=true
  hack/cluster.sh start
fi

test_env=(KAPP_E2E_BINARY="$ROOT/bin/kapp" KUBECONFIG="$ROOT/.cache/cluster/kubeconfig")
if $kapp_controller; then
  section "start kapp-controller"
  if hack/kapp-controller.sh status >/dev/null 2>&1; then
    echo "reusing the running kapp-controller (hack/kapp-controller.sh stop to stop it)"
  else
    started_controller=true
    KAPP_CRD_UPGRADE_SAFETY_CONFIG="$ROOT/test/e2e/testdata/kappctrl/controller-settings.yaml" \
      hack/kapp-controller.sh start
  fi
  # KAPPCTRL_E2E_*: what the tests need to know of it.
  mapfile -t controller_env < <(hack/kapp-controller.sh test-env)
  test_env+=("${controller_env[@]}")
fi

section "e2e tests"
env "${test_env[@]}" go test ./test/e2e/... -count=1 -parallel 8 -timeout 20m "$@"

if ! $started_cluster; then
  echo "the cluster is still running"
fi
if $kapp_controller && ! $started_controller; then
  echo "kapp-controller is still running"
fi

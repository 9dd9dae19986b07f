#!/usr/bin/env bash
# kapp-controller for the end-to-end tests: kapp-controller v0.51.0, ytt and
# vendir built from source through the Go module proxy (module hack/kappctrl),
# run out of cluster as two local processes (the controller and its
# --sidecarexec, which runs vendir and ytt) against the cluster of
# hack/cluster.sh, with our bin/kapp first on PATH: every App is deployed by
# this distribution's kapp (or by the kapp of $KAPPCTRL_KAPP).
#
# Usage: hack/kapp-controller.sh build              build the binaries if the pins changed
#        hack/kapp-controller.sh start              build, install what the cluster needs, start, wait until ready
#        hack/kapp-controller.sh stop               stop the controller and its sidecar
#        hack/kapp-controller.sh status             say whether it runs
#        hack/kapp-controller.sh run CMD [ARG...]   start, run CMD, always stop
#        hack/kapp-controller.sh test-env           print, as KEY=value lines, what test/e2e reads
#                                                   of the running controller (KAPPCTRL_E2E_*: its logs,
#                                                   settings file, ytt, release config, kapp, namespace)
#
# The cluster must be running (hack/cluster.sh start) and bin/kapp built
# (hack/build.sh). Delete your Apps before stop: kapp-controller removes an
# App's finalizer only after it has deleted what the App deployed.
#
# Environment:
#   CLUSTER_STATE_DIR     the cluster to use (default .cache/cluster; its kubeconfig)
#   KAPPCTRL_STATE_DIR    (default .cache/kappctrl) pids, logs of the running controller;
#                         a second controller needs a directory of its own
#   KAPPCTRL_KAPP         the kapp the controller runs (default bin/kapp), first on
#                         its PATH as `kapp`: e.g. upstream kapp, built without our
#                         preflight. (The install and the probe App are deployed
#                         with bin/kapp; the probe App is reconciled with this one.)
#   KAPPCTRL_NAMESPACE    the one namespace whose Apps the controller reconciles
#                         (kapp-controller's --namespace; created if missing; the
#                         probe App runs there). Default: every namespace, the probe
#                         in kapp-controller. Two controllers on one cluster must
#                         each have a namespace of their own, or they fight over
#                         the same Apps.
#   KAPP_CRD_UPGRADE_SAFETY_CONFIG
#                         passed to the controller only (and so to every kapp it
#                         runs); not to CMD of run
#
# Files (all under .cache/, git-ignored):
#   .cache/kappctrl/bin/    kapp-controller, ytt, vendir, kappctrlutil and their stamps
#   .cache/kbld/bin/        kbld (module hack/kbld, its own pins) and its stamp: the
#                           template step of packages fetched as imgpkg bundles
#   $KAPPCTRL_STATE_DIR/logs/controller.log, sidecar.log
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULE_DIR="$ROOT/hack/kappctrl"
BIN_DIR="$ROOT/.cache/kappctrl/bin"
KBLD_MODULE_DIR="$ROOT/hack/kbld"
KBLD_BIN_DIR="$ROOT/.cache/kbld/bin"
STATE_DIR="${KAPPCTRL_STATE_DIR:-$ROOT/.cache/kappctrl}"
RUN_FILE="$STATE_DIR/controller.env" # pids and temp dir of the running controller
LOG_DIR="$STATE_DIR/logs"
CLUSTER_KUBECONFIG="${CLUSTER_STATE_DIR:-$ROOT/.cache/cluster}/kubeconfig"
KAPP="$ROOT/bin/kapp"                          # installs and deploys the probe App
CONTROLLER_KAPP="${KAPPCTRL_KAPP:-$ROOT/bin/kapp}" # what the controller runs
WATCH_NAMESPACE="${KAPPCTRL_NAMESPACE:-}"         # "": every namespace

SYSTEM_NAMESPACE="kapp-controller" # hack/kappctrl/cluster.yaml creates it
SETUP_APP="kapp-controller-e2e-setup"
PROBE_APP="kapp-controller-e2e-probe"

# The settings file is the controller's, not the caller's: kapp run by CMD
# (the tests) must not see it.
SAFETY_CONFIG="${KAPP_CRD_UPGRADE_SAFETY_CONFIG:-}"
unset KAPP_CRD_UPGRADE_SAFETY_CONFIG

# The builds, as their own release builds do them: static, trimmed, with
# the versions (from go.mod) that the binaries report.
BUILD_FLAGS=(-mod=readonly -trimpath)
export CGO_ENABLED=0
ldflags() {
  printf -- '-s -w -X main.Version=v%s -X carvel.dev/ytt/pkg/version.Version=%s -X carvel.dev/vendir/pkg/vendir/version.Version=%s' \
    "$(module_version github.com/vmware-tanzu/carvel-kapp-controller)" "$(module_version carvel.dev/ytt)" "$(module_version carvel.dev/vendir)"
}
module_version() { # module_version MODULE -> its version in hack/kappctrl, without the v
  (cd "$MODULE_DIR" && go list -mod=readonly -m -f '{{.Version}}' "$1") | sed 's/^v//'
}

START=$SECONDS
log() { printf '[kapp-controller] %s (%ss)\n' "$*" "$((SECONDS - START))" >&2; }
die() {
  log "error: $*"
  exit 1
}

# ---------------------------------------------------------------- build

# The binaries are rebuilt when the pins (go.mod, go.sum), the Go toolchain
# or the build flags change (build_stamp, go_build_stamped of hack/lib/build.sh).
build() {
  build_lock "$BIN_DIR" "kapp-controller"
  go_build_stamped "kapp-controller, ytt and vendir" "$MODULE_DIR" "$BIN_DIR" -- \
    kapp-controller=github.com/vmware-tanzu/carvel-kapp-controller/cmd/controller carvel.dev/ytt/cmd/ytt carvel.dev/vendir/cmd/vendir

  local want have
  want="$(build_stamp "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" "$MODULE_DIR"/kappctrlutil/*.go)"
  have="$(cat "$BIN_DIR/.stamp-kappctrlutil" 2>/dev/null || true)"
  if [[ "$want" != "$have" || ! -x "$BIN_DIR/kappctrlutil" ]]; then
    (cd "$MODULE_DIR" && go build "${BUILD_FLAGS[@]}" -ldflags "-s -w" -o "$BIN_DIR/kappctrlutil" ./kappctrlutil)
    echo "$want" >"$BIN_DIR/.stamp-kappctrlutil"
  fi
  build_unlock
  build_kbld
}

# build_kbld builds kbld (module hack/kbld) into its own folder: the
# PackageRepository and Package tests (test/e2e/install_package_test.go)
# need it on the controller's PATH.
build_kbld() {
  build_lock "$KBLD_BIN_DIR" "kbld"
  local want have
  want="$(build_stamp "$KBLD_MODULE_DIR/go.mod" "$KBLD_MODULE_DIR/go.sum")"
  have="$(cat "$KBLD_BIN_DIR/.stamp" 2>/dev/null || true)"
  if [[ "$want" != "$have" || ! -x "$KBLD_BIN_DIR/kbld" ]]; then
    log "building kbld from source through the Go module proxy (module hack/kbld)"
    local start=$SECONDS tmp version
    version="$(cd "$KBLD_MODULE_DIR" && go list -mod=readonly -m -f '{{.Version}}' carvel.dev/kbld | sed 's/^v//')"
    tmp="$(mktemp -d "$KBLD_BIN_DIR/.build.XXXXXX")"
    (
      cd "$KBLD_MODULE_DIR" &&
        go_build_progress "kbld" "$tmp/build.log" "${BUILD_FLAGS[@]}" \
          -ldflags "-s -w -X carvel.dev/kbld/pkg/kbld/version.Version=$version" -o "$tmp/kbld" carvel.dev/kbld/cmd/kbld
    ) || {
      rm -rf "$tmp"
      die "building kbld failed"
    }
    mv -f "$tmp/kbld" "$KBLD_BIN_DIR/kbld"
    rm -rf "$tmp"
    echo "$want" >"$KBLD_BIN_DIR/.stamp"
    log "built kbld in $((SECONDS - start))s"
  fi
  build_unlock
}

# ---------------------------------------------------------------- start / stop

is_running() {
  [[ -f "$RUN_FILE" ]] || return 1
  # shellcheck disable=SC1090
  (source "$RUN_FILE" && kill -0 "$CONTROLLER_PID" 2>/dev/null && kill -0 "$SIDECAR_PID" 2>/dev/null)
}

# shellcheck source=hack/lib/process.sh
source "$ROOT/hack/lib/process.sh" # stop_pid
# shellcheck source=hack/lib/build.sh
source "$ROOT/hack/lib/build.sh" # build_lock, build_stamp, go_build_stamped, go_build_progress

stop() {
  if [[ ! -f "$RUN_FILE" ]]; then
    log "no kapp-controller recorded in $STATE_DIR"
    return 0
  fi
  local CONTROLLER_PID="" SIDECAR_PID="" TMP_DIR="" SAFETY_CONFIG="" CONTROLLER_KAPP="" WATCH_NAMESPACE=""
  # shellcheck disable=SC1090
  source "$RUN_FILE"
  # The controller first: it runs kapp and talks to the sidecar.
  stop_pid "$CONTROLLER_PID" controller "$BIN_DIR/kapp-controller"
  stop_pid "$SIDECAR_PID" sidecar "$BIN_DIR/kapp-controller"
  if [[ -n "$TMP_DIR" && -d "$TMP_DIR" ]]; then
    rm -rf "$TMP_DIR"
  fi
  rm -f "$RUN_FILE"
  log "stopped"
}

show_logs() {
  local f
  for f in sidecar controller; do
    if [[ -s "$LOG_DIR/$f.log" ]]; then
      echo "--- last lines of $LOG_DIR/$f.log ---" >&2
      tail -n 30 "$LOG_DIR/$f.log" >&2 || true
    fi
  done
}

# kapp_controller_dir prints the directory of the kapp-controller module
# (in the module cache).
kapp_controller_dir() {
  (cd "$MODULE_DIR" && go list -mod=readonly -m -f '{{.Dir}}' github.com/vmware-tanzu/carvel-kapp-controller)
}

# install puts on the cluster what kapp-controller needs: its CRDs (from
# the module it is built from), its namespace and the CRD standing in for
# its aggregated Package API.
install() {
  local crds
  crds="$(kapp_controller_dir)/config/config/crds.yml"
  [[ -f "$crds" ]] || die "$crds not found"
  "$KAPP" deploy --kubeconfig "$CLUSTER_KUBECONFIG" -n default -a "$SETUP_APP" -y --tty=false \
    -f "$crds" -f "$MODULE_DIR/cluster.yaml" >"$LOG_DIR/install.log" 2>&1 || {
    cat "$LOG_DIR/install.log" >&2
    die "installing kapp-controller's CRDs failed"
  }
  if [[ -n "$WATCH_NAMESPACE" ]]; then
    "$BIN_DIR/kappctrlutil" namespace "$CLUSTER_KUBECONFIG" "$WATCH_NAMESPACE" >>"$LOG_DIR/install.log" 2>&1 || {
      cat "$LOG_DIR/install.log" >&2
      die "creating namespace $WATCH_NAMESPACE failed"
    }
  fi
}

# wait_ready waits until both processes run, the sidecar listens and the
# App controller has started its workers (its caches are synced).
wait_ready() {
  local controller_pid="$1" sidecar_pid="$2" sock="$3" i
  for ((i = 0; i < 1200; i++)); do # 120s
    kill -0 "$controller_pid" 2>/dev/null || die "the controller exited; see $LOG_DIR/controller.log"
    kill -0 "$sidecar_pid" 2>/dev/null || die "the sidecar exited; see $LOG_DIR/sidecar.log"
    if [[ -S "$sock" ]] && grep -q '"Starting workers".*"controller":"app"' "$LOG_DIR/controller.log"; then
      return 0
    fi
    sleep 0.1
  done
  die "the App controller did not start its workers within 120s"
}

# probe deploys a trivial App (inline fetch, ytt, kapp through a service
# account) and waits until it is reconciled: proof that the whole chain works before tests
# rely on it. It is deleted again so that a later start probes anew. It runs
# in the namespace the controller watches (hack/kappctrl/probe.yaml is
# written for kapp-controller's).
probe() {
  local ns="${WATCH_NAMESPACE:-$SYSTEM_NAMESPACE}" manifest="$STATE_DIR/probe.yaml"
  sed "s/namespace: $SYSTEM_NAMESPACE\b/namespace: $ns/g" "$MODULE_DIR/probe.yaml" >"$manifest"
  local kc=(--kubeconfig "$CLUSTER_KUBECONFIG" -n "$ns" --tty=false -y --wait-timeout=2m)
  # A probe left by an interrupted start goes first (the controller must
  # run to delete an App).
  "$KAPP" delete "${kc[@]}" -a "$PROBE_APP" >"$LOG_DIR/probe.log" 2>&1 || {
    cat "$LOG_DIR/probe.log" >&2
    die "deleting the probe App of an earlier start failed"
  }
  # kapp waits for an App to reconcile, and fails with its status.
  "$KAPP" deploy "${kc[@]}" -a "$PROBE_APP" -f "$manifest" >>"$LOG_DIR/probe.log" 2>&1 || {
    cat "$LOG_DIR/probe.log" >&2
    die "kapp-controller did not reconcile the probe App (hack/kappctrl/probe.yaml, in namespace $ns)"
  }
  "$KAPP" delete "${kc[@]}" -a "$PROBE_APP" >>"$LOG_DIR/probe.log" 2>&1 || {
    cat "$LOG_DIR/probe.log" >&2
    die "deleting the probe App failed"
  }
}

start() {
  if is_running; then
    log "already running (hack/kapp-controller.sh stop to stop it)"
    return 0
  fi
  [[ -s "$CLUSTER_KUBECONFIG" ]] || die "no cluster: $CLUSTER_KUBECONFIG does not exist (hack/cluster.sh start)"
  [[ -x "$KAPP" ]] || die "$KAPP does not exist (hack/build.sh)"
  [[ -x "$CONTROLLER_KAPP" && ! -d "$CONTROLLER_KAPP" ]] || die "KAPPCTRL_KAPP=$CONTROLLER_KAPP: no such executable"
  CONTROLLER_KAPP="$(cd "$(dirname "$CONTROLLER_KAPP")" && pwd)/$(basename "$CONTROLLER_KAPP")"
  if [[ -n "$SAFETY_CONFIG" ]]; then
    [[ -f "$SAFETY_CONFIG" ]] || die "KAPP_CRD_UPGRADE_SAFETY_CONFIG=$SAFETY_CONFIG: no such file"
    SAFETY_CONFIG="$(cd "$(dirname "$SAFETY_CONFIG")" && pwd)/$(basename "$SAFETY_CONFIG")"
  fi
  build
  mkdir -p "$STATE_DIR" "$LOG_DIR"
  stop >/dev/null 2>&1 || true # leftovers of a crashed run
  rm -f "$LOG_DIR"/*.log

  # On any failure from here on: show the logs, stop what was started. (run
  # has a trap of its own, restored once started.)
  local outer_trap
  outer_trap="$(trap -p EXIT)"
  trap 'rc=$?; if [[ $rc -ne 0 ]]; then show_logs; stop; fi' EXIT
  install
  log "installed kapp-controller's CRDs and namespace"

  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/kapp-e2e-kappctrl.XXXXXX")"
  mkdir "$tmp/mem" "$tmp/bin"
  # kapp-controller runs `kapp` from its PATH.
  ln -s "$CONTROLLER_KAPP" "$tmp/bin/kapp"
  # Record what exists as soon as it exists, so stop can clean up after any failure.
  printf 'TMP_DIR=%q\n' "$tmp" >"$RUN_FILE"

  # What the Deployment of config/config/deployment.yml gives both
  # containers, plus what an out-of-cluster run needs: the cluster's
  # kubeconfig, and for Apps with spec.serviceAccountName the apiserver and
  # its CA (in a pod: the service environment and the mounted CA).
  local KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT KAPPCTRL_KUBERNETES_CA_DATA cluster_env
  cluster_env="$("$BIN_DIR/kappctrlutil" env "$CLUSTER_KUBECONFIG")" || die "reading $CLUSTER_KUBECONFIG"
  eval "$cluster_env" # three assignments, quoted by kappctrlutil
  local -a env=(
    "PATH=$tmp/bin:$BIN_DIR:$KBLD_BIN_DIR:$PATH"
    "KUBECONFIG=$CLUSTER_KUBECONFIG"
    "KAPPCTRL_SYSTEM_NAMESPACE=$SYSTEM_NAMESPACE"
    "KAPPCTRL_MEM_TMP_DIR=$tmp/mem"
    "KAPPCTRL_SIDECAREXEC_SOCK=$tmp/sidecarexec.sock"
    "KUBERNETES_SERVICE_HOST=$KUBERNETES_SERVICE_HOST"
    "KUBERNETES_SERVICE_PORT=$KUBERNETES_SERVICE_PORT"
    "KAPPCTRL_KUBERNETES_CA_DATA=$KAPPCTRL_KUBERNETES_CA_DATA"
  )
  printf 'SAFETY_CONFIG=%q\nCONTROLLER_KAPP=%q\nWATCH_NAMESPACE=%q\n' "$SAFETY_CONFIG" "$CONTROLLER_KAPP" "$WATCH_NAMESPACE" >>"$RUN_FILE"
  log "every App${WATCH_NAMESPACE:+ of namespace $WATCH_NAMESPACE} is deployed by $CONTROLLER_KAPP ($("$CONTROLLER_KAPP" version 2>/dev/null | head -n 1))"
  if [[ -n "$SAFETY_CONFIG" ]]; then
    env+=("KAPP_CRD_UPGRADE_SAFETY_CONFIG=$SAFETY_CONFIG")
    log "every kapp deploy of the controller runs CRDUpgradeSafety with $SAFETY_CONFIG"
  fi

  env "${env[@]}" "$BIN_DIR/kapp-controller" --sidecarexec >"$LOG_DIR/sidecar.log" 2>&1 &
  local sidecar_pid=$!
  printf 'SIDECAR_PID=%q\n' "$sidecar_pid" >>"$RUN_FILE"
  local -a flags=(--start-api-server=false --metrics-bind-address=0)
  if [[ -n "$WATCH_NAMESPACE" ]]; then
    flags+=("--namespace=$WATCH_NAMESPACE")
  fi
  env "${env[@]}" "$BIN_DIR/kapp-controller" "${flags[@]}" >"$LOG_DIR/controller.log" 2>&1 &
  local controller_pid=$!
  printf 'CONTROLLER_PID=%q\n' "$controller_pid" >>"$RUN_FILE"

  wait_ready "$controller_pid" "$sidecar_pid" "$tmp/sidecarexec.sock"
  log "controller $controller_pid and sidecar $sidecar_pid started; probing with an App"
  probe
  eval "${outer_trap:-trap - EXIT}"
  log "ready; logs in $LOG_DIR"
}

status() {
  if is_running; then
    local CONTROLLER_KAPP="$ROOT/bin/kapp" WATCH_NAMESPACE=""
    # shellcheck disable=SC1090
    (source "$RUN_FILE" && log "running (controller pid $CONTROLLER_PID, sidecar pid $SIDECAR_PID, Apps of ${WATCH_NAMESPACE:-every namespace}, kapp $CONTROLLER_KAPP); logs in $LOG_DIR")
  else
    log "not running"
    return 1
  fi
}

test_env() {
  is_running || die "not running (hack/kapp-controller.sh start)"
  local SAFETY_CONFIG="" CONTROLLER_KAPP="$ROOT/bin/kapp" WATCH_NAMESPACE="" # as recorded by start
  # shellcheck disable=SC1090
  source "$RUN_FILE"
  printf 'KAPPCTRL_E2E_LOGS=%s\nKAPPCTRL_E2E_SAFETY_CONFIG=%s\nKAPPCTRL_E2E_YTT=%s\nKAPPCTRL_E2E_RELEASE_CONFIG=%s\nKAPPCTRL_E2E_KAPP=%s\nKAPPCTRL_E2E_NAMESPACE=%s\n' \
    "$LOG_DIR" "$SAFETY_CONFIG" "$BIN_DIR/ytt" "$(kapp_controller_dir)/config" "$CONTROLLER_KAPP" "$WATCH_NAMESPACE"
}

run() {
  [[ $# -gt 0 ]] || die "run needs a command"
  trap 'rc=$?; if [[ $rc -ne 0 ]]; then show_logs; fi; stop' EXIT
  start
  "$@"
}

case "${1:-}" in
build) build ;;
start) start ;;
stop) stop ;;
status) status ;;
test-env) test_env ;;
run)
  shift
  run "$@"
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac

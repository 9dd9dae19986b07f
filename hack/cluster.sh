#!/usr/bin/env bash
# A throwaway Kubernetes control plane for the end-to-end tests and the demo:
# etcd + kube-apiserver, both built from source through the Go module proxy
# (module hack/cluster), listening on free loopback ports. No docker, no kind,
# no downloaded binaries, no controller-manager: the apiserver alone
# establishes CRDs and creates the default and kube-system namespaces.
#
# Usage: hack/cluster.sh build              build the binaries if the pins changed
#        hack/cluster.sh start              build, start, wait for /readyz, write the kubeconfig
#        hack/cluster.sh stop               stop the cluster and delete its data
#        hack/cluster.sh status             say whether it runs
#        hack/cluster.sh run CMD [ARG...]   start, run CMD with KUBECONFIG set, always stop
#
# Files (all under .cache/, git-ignored):
#   .cache/cluster/bin/         kube-apiserver, etcd, clusterutil and their stamps
#   $CLUSTER_STATE_DIR          (default .cache/cluster) kubeconfig, pids, logs of the running cluster
#   $CLUSTER_STATE_DIR/kubeconfig   admin kubeconfig (token auth, group system:masters)
# Set CLUSTER_STATE_DIR to run a second cluster beside the first (the demo does).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULE_DIR="$ROOT/hack/cluster"
BIN_DIR="$ROOT/.cache/cluster/bin"
STATE_DIR="${CLUSTER_STATE_DIR:-$ROOT/.cache/cluster}"
KUBECONFIG_OUT="$STATE_DIR/kubeconfig"
RUN_FILE="$STATE_DIR/cluster.env" # pids, ports and temp dir of the running cluster
LOG_DIR="$STATE_DIR/logs"

K8S_VERSION="v1.35.0" # keep in step with k8s.io/kubernetes in hack/cluster/go.mod
LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35 -X k8s.io/component-base/version.gitTreeState=clean"

log() { printf '[cluster] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# ---------------------------------------------------------------- build

# The binaries are rebuilt when this changes: the pins (go.mod, go.sum), the
# Go toolchain or the build flags.
stamp_of() { # stamp_of FILE... -> hash of the files, the go version and the build flags
  {
    cat "$@"
    go env GOVERSION GOOS GOARCH
    echo "$LDFLAGS"
  } | sha256sum | cut -d' ' -f1
}

build() {
  mkdir -p "$BIN_DIR"
  # One build at a time (test.sh and demo.sh may race on a fresh clone).
  exec 9>"$BIN_DIR/.build.lock"
  flock 9

  local want have
  want="$(stamp_of "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum")"
  have="$(cat "$BIN_DIR/.stamp" 2>/dev/null || true)"
  if [[ "$want" == "$have" && -x "$BIN_DIR/kube-apiserver" && -x "$BIN_DIR/etcd" ]]; then
    log "kube-apiserver and etcd are up to date ($BIN_DIR)"
  else
    log "building kube-apiserver $K8S_VERSION and etcd from source through the Go module proxy:"
    log "on a cold cache about 15 minutes on 2 cores (a line every 30s says how far it is); once only"
    local start=$SECONDS tmp
    tmp="$(mktemp -d "$BIN_DIR/.build.XXXXXX")"
    # -mod=readonly: the committed go.sum is the pin. (&& because set -e
    # does not apply inside the left-hand side of ||.)
    (
      cd "$MODULE_DIR" &&
        go_build_progress "kube-apiserver" "$tmp/kube-apiserver.log" \
          -mod=readonly -trimpath -ldflags "$LDFLAGS" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver &&
        go_build_progress "etcd" "$tmp/etcd.log" \
          -mod=readonly -trimpath -ldflags "$LDFLAGS" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
    ) || {
      rm -rf "$tmp"
      die "build failed"
    }
    mv -f "$tmp/kube-apiserver" "$tmp/etcd" "$BIN_DIR/"
    rm -rf "$tmp"
    echo "$want" >"$BIN_DIR/.stamp"
    log "built in $(elapsed $((SECONDS - start)))"
  fi

  want="$(stamp_of "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" "$MODULE_DIR"/clusterutil/*.go)"
  have="$(cat "$BIN_DIR/.stamp-clusterutil" 2>/dev/null || true)"
  if [[ "$want" != "$have" || ! -x "$BIN_DIR/clusterutil" ]]; then
    (cd "$MODULE_DIR" && go build -mod=readonly -o "$BIN_DIR/clusterutil" ./clusterutil)
    echo "$want" >"$BIN_DIR/.stamp-clusterutil"
  fi
  flock -u 9
}

# ---------------------------------------------------------------- start / stop

is_running() {
  [[ -f "$RUN_FILE" ]] || return 1
  # shellcheck disable=SC1090
  (source "$RUN_FILE" && kill -0 "$APISERVER_PID" 2>/dev/null && kill -0 "$ETCD_PID" 2>/dev/null)
}

# shellcheck source=hack/lib/process.sh
source "$ROOT/hack/lib/process.sh" # stop_pid
# shellcheck source=hack/lib/build.sh
source "$ROOT/hack/lib/build.sh" # go_build_progress, elapsed

stop() {
  if [[ ! -f "$RUN_FILE" ]]; then
    log "no cluster recorded in $STATE_DIR"
    return 0
  fi
  local APISERVER_PID="" ETCD_PID="" TMP_DIR=""
  # shellcheck disable=SC1090
  source "$RUN_FILE"
  # The apiserver first, so it does not log etcd errors on its way out.
  stop_pid "$APISERVER_PID" kube-apiserver
  stop_pid "$ETCD_PID" etcd
  if [[ -n "$TMP_DIR" && -d "$TMP_DIR" ]]; then
    rm -rf "$TMP_DIR"
  fi
  rm -f "$RUN_FILE" "$KUBECONFIG_OUT"
  log "stopped"
}

# start_once tries one set of ports. It runs as its own process
# ("cluster.sh _start_once") so that set -e holds inside it; it exits non-zero
# with everything it started stopped when a port was taken or a process died,
# and start retries.
start_once() {
  trap 'stop >/dev/null' EXIT
  local etcd_client etcd_peer api_port
  mapfile -t ports < <("$BIN_DIR/clusterutil" freeports 3)
  etcd_client="${ports[0]}" etcd_peer="${ports[1]}" api_port="${ports[2]}"

  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/kapp-e2e-cluster.XXXXXX")"
  # Record what exists as soon as it exists, so stop can clean up after any failure.
  printf 'TMP_DIR=%q\n' "$tmp" >"$RUN_FILE"

  "$BIN_DIR/clusterutil" certs "$tmp/pki"

  log "starting etcd on 127.0.0.1:$etcd_client"
  "$BIN_DIR/etcd" \
    --name=e2e \
    --data-dir="$tmp/etcd" \
    --listen-client-urls="http://127.0.0.1:$etcd_client" \
    --advertise-client-urls="http://127.0.0.1:$etcd_client" \
    --listen-peer-urls="http://127.0.0.1:$etcd_peer" \
    --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer" \
    --initial-cluster="e2e=http://127.0.0.1:$etcd_peer" \
    --listen-metrics-urls="" \
    --unsafe-no-fsync \
    --log-level=warn \
    >"$LOG_DIR/etcd.log" 2>&1 &
  local etcd_pid=$!
  printf 'ETCD_PID=%q\n' "$etcd_pid" >>"$RUN_FILE"
  if ! "$BIN_DIR/clusterutil" wait -pid "$etcd_pid" "http://127.0.0.1:$etcd_client/health" 30s; then
    log "etcd did not become healthy; last log lines:"
    tail -n 20 "$LOG_DIR/etcd.log" >&2 || true
    exit 1
  fi

  log "starting kube-apiserver on 127.0.0.1:$api_port"
  # Lean: no admission plugin but NamespaceLifecycle and
  # ValidatingAdmissionPolicy (the e2e tests prove the check's server-side dry
  # run sees policies), no priority & fairness, no endpoint reconciler. RBAC
  # with the admin in system:masters.
  "$BIN_DIR/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$etcd_client" \
    --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 \
    --secure-port="$api_port" \
    --cert-dir="$tmp/pki" \
    --tls-cert-file="$tmp/pki/serving.crt" \
    --tls-private-key-file="$tmp/pki/serving.key" \
    --token-auth-file="$tmp/pki/tokens.csv" \
    --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$tmp/pki/sa.pub" \
    --service-account-signing-key-file="$tmp/pki/sa.key" \
    --service-cluster-ip-range=10.96.0.0/24 \
    --enable-admission-plugins=NamespaceLifecycle,ValidatingAdmissionPolicy \
    --disable-admission-plugins="$DISABLED_ADMISSION" \
    --enable-priority-and-fairness=false \
    --endpoint-reconciler-type=none \
    --profiling=false \
    >"$LOG_DIR/kube-apiserver.log" 2>&1 &
  local api_pid=$!
  printf 'APISERVER_PID=%q\nAPISERVER_URL=%q\n' "$api_pid" "https://127.0.0.1:$api_port" >>"$RUN_FILE"

  if ! "$BIN_DIR/clusterutil" wait -pid "$api_pid" -ca "$tmp/pki/ca.crt" -token-file "$tmp/pki/token" \
    "https://127.0.0.1:$api_port/readyz" 90s; then
    log "kube-apiserver did not become ready; last log lines:"
    tail -n 30 "$LOG_DIR/kube-apiserver.log" >&2 || true
    exit 1
  fi
  "$BIN_DIR/clusterutil" kubeconfig "$tmp/pki" "https://127.0.0.1:$api_port" "$KUBECONFIG_OUT"
  trap - EXIT
}

DISABLED_ADMISSION="$(
  IFS=,
  a=(
    LimitRanger ServiceAccount TaintNodesByCondition PodSecurity Priority DefaultTolerationSeconds
    DefaultStorageClass StorageObjectInUseProtection PersistentVolumeClaimResize RuntimeClass
    CertificateApproval CertificateSigning ClusterTrustBundleAttest CertificateSubjectRestriction
    DefaultIngressClass MutatingAdmissionWebhook ValidatingAdmissionWebhook ResourceQuota
  )
  echo "${a[*]}"
)"

start() {
  if is_running; then
    log "already running; kubeconfig: $KUBECONFIG_OUT"
    return 0
  fi
  build
  mkdir -p "$STATE_DIR" "$LOG_DIR"
  stop >/dev/null 2>&1 || true # leftovers of a crashed run

  local started=$SECONDS attempt
  for attempt in 1 2 3 4 5; do
    if bash "${BASH_SOURCE[0]}" _start_once; then
      log "ready in $((SECONDS - started))s; export KUBECONFIG=$KUBECONFIG_OUT"
      return 0
    fi
    log "attempt $attempt failed (a port may have been taken); retrying with new ports"
  done
  die "could not start the cluster; logs in $LOG_DIR"
}

status() {
  if is_running; then
    # shellcheck disable=SC1090
    (source "$RUN_FILE" && log "running at $APISERVER_URL (apiserver pid $APISERVER_PID, etcd pid $ETCD_PID)")
    log "kubeconfig: $KUBECONFIG_OUT"
  else
    log "not running"
    return 1
  fi
}

run() {
  [[ $# -gt 0 ]] || die "run needs a command"
  trap stop EXIT
  start
  KUBECONFIG="$KUBECONFIG_OUT" "$@"
}

case "${1:-}" in
build) build ;;
start) start ;;
stop) stop ;;
status) status ;;
_start_once) start_once ;;
run)
  shift
  run "$@"
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac

#!/usr/bin/env bash
# A throwaway Kubernetes control plane for the end-to-end tests and the demo:
# etcd, kube-apiserver and kube-controller-manager, built from source through
# the Go module proxy, listening on loopback (the controller manager serves
# nothing). No docker, no kind, no downloaded binaries, no scheduler, no
# nodes. The controller manager runs its default controllers: garbage
# collection, namespace deletion, service accounts, the storage version
# migrator, ...
#
# Usage: hack/cluster.sh build              build the binaries if the pins changed
#        hack/cluster.sh start              build, start, wait until ready, write the kubeconfig
#        hack/cluster.sh stop               stop the cluster and delete its data
#        hack/cluster.sh status             say whether it runs, and which version
#        hack/cluster.sh run CMD [ARG...]   start, run CMD with KUBECONFIG and KUBE_VERSION set, always stop
#        hack/cluster.sh test-env           print, as KEY=value lines, what test/e2e reads of the
#                                           running cluster (KUBECONFIG, KUBE_VERSION, KUBECTL)
#        hack/cluster.sh stop-apiserver     kill the running cluster's kube-apiserver (SIGKILL, a
#                                           crash); etcd and the controller manager keep running
#        hack/cluster.sh start-apiserver    start it again, as before (same ports, certificates,
#                                           flags), and wait until it is ready
#        hack/cluster.sh restart-apiserver  both (hack/soak-webhook.sh)
#
# Environment:
#   KUBE_VERSION        the Kubernetes minor version to build and start: 1.37 (default) or
#                       1.35, one per module hack/cluster/k8s-<version>. stop, status and
#                       test-env act on the running cluster, whatever its version.
#   CLUSTER_STATE_DIR   (default .cache/cluster) where the running cluster's files are; set
#                       it to run a second cluster beside the first (the demo does)
#
# Files (all under .cache/, git-ignored):
#   .cache/cluster/<version>/bin/   kube-apiserver, kube-controller-manager, kubectl, etcd, stamp
#   .cache/cluster/bin/             clusterutil-<stamp of its sources>
#   $CLUSTER_STATE_DIR/kubeconfig   admin kubeconfig (token auth, group system:masters)
#   $CLUSTER_STATE_DIR/cluster.env  version, pids, ports and temp dir of the running cluster
#   $CLUSTER_STATE_DIR/logs/        etcd.log, kube-apiserver.log, kube-controller-manager.log
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBE_VERSION="${KUBE_VERSION:-1.37}"
MODULE_DIR="$ROOT/hack/cluster/k8s-$KUBE_VERSION"
BIN_DIR="$ROOT/.cache/cluster/$KUBE_VERSION/bin"
UTIL_DIR="$ROOT/hack/cluster"         # module of clusterutil
UTIL_BIN_DIR="$ROOT/.cache/cluster/bin" # clusterutil, whatever the version
STATE_DIR="${CLUSTER_STATE_DIR:-$ROOT/.cache/cluster}"
KUBECONFIG_OUT="$STATE_DIR/kubeconfig"
RUN_FILE="$STATE_DIR/cluster.env" # version, pids, ports and temp dir of the running cluster
LOG_DIR="$STATE_DIR/logs"

log() { printf '[cluster] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# ---------------------------------------------------------------- build

# The version of the module's k8s.io/kubernetes, as the binaries report it
# (without these ldflags the apiserver says v0.0.0-master+$Format:%H$, which
# clients refuse).
select_version() {
  [[ -f "$MODULE_DIR/go.mod" ]] ||
    die "KUBE_VERSION=$KUBE_VERSION: no module hack/cluster/k8s-$KUBE_VERSION (there are: $(cd "$ROOT/hack/cluster" && ls -d k8s-* | sed 's/^k8s-//' | paste -sd' '))"
  K8S_VERSION="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "$MODULE_DIR/go.mod")"
  [[ "$K8S_VERSION" == v"$KUBE_VERSION".* ]] ||
    die "hack/cluster/k8s-$KUBE_VERSION/go.mod requires k8s.io/kubernetes ${K8S_VERSION:-(none)}, not $KUBE_VERSION.x"
  local minor="${KUBE_VERSION#*.}"
  LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
}

# The binaries are rebuilt when this changes: the pins (go.mod, go.sum), the
# Go toolchain or the build flags and list.
stamp_of() { # stamp_of FILE... -> hash of the files and the go version
  {
    cat "$@"
    go env GOVERSION GOOS GOARCH
  } | sha256sum | cut -d' ' -f1
}

# clusterutil is named by the stamp of its sources: trees with different
# sources (worktrees sharing .cache) each run their own, never one another's.
CLUSTERUTIL_STAMP="$(stamp_of "$UTIL_DIR/go.mod" "$UTIL_DIR"/clusterutil/*.go)"
CLUSTERUTIL="$UTIL_BIN_DIR/clusterutil-${CLUSTERUTIL_STAMP:0:16}"

BINARIES=(kube-apiserver kube-controller-manager kubectl etcd)

build() {
  select_version
  mkdir -p "$BIN_DIR" "$UTIL_BIN_DIR"
  # One build of a version at a time (test.sh and demo.sh may race on a
  # fresh clone); two versions may build at once.
  exec 9>"$BIN_DIR/.build.lock"
  flock -n 9 || {
    log "waiting for another build of Kubernetes $K8S_VERSION (hack/test.sh builds in the background) to finish"
    flock 9
  }

  local want have b ok=true
  want="$(stamp_of "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" <(echo "$LDFLAGS" "${BINARIES[*]}"))"
  have="$(cat "$BIN_DIR/.stamp" 2>/dev/null || true)"
  for b in "${BINARIES[@]}"; do
    [[ -x "$BIN_DIR/$b" ]] || ok=false
  done
  if [[ "$want" == "$have" ]] && $ok; then
    log "Kubernetes $K8S_VERSION is up to date ($BIN_DIR)"
  else
    log "building kube-apiserver, kube-controller-manager, kubectl $K8S_VERSION and etcd from source through the Go module proxy:"
    log "on a cold cache about 15 minutes on 2 cores (a line every 30s says how far it is); once per version"
    local start=$SECONDS tmp
    tmp="$(mktemp -d "$BIN_DIR/.build.XXXXXX")"
    # One go build of the four: their packages compile once and in parallel.
    # -mod=readonly: the committed go.sum is the pin. (&& because set -e does
    # not apply inside the left-hand side of ||.) go build names etcd's
    # binary after its module go.etcd.io/etcd/server/v3: server.
    (
      cd "$MODULE_DIR" &&
        go_build_progress "Kubernetes $K8S_VERSION" "$tmp/build.log" \
          -mod=readonly -trimpath -ldflags "$LDFLAGS" -o "$tmp/" \
          k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
          k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3 &&
        mv "$tmp/server" "$tmp/etcd"
    ) || {
      rm -rf "$tmp"
      die "build failed"
    }
    for b in "${BINARIES[@]}"; do
      mv -f "$tmp/$b" "$BIN_DIR/"
    done
    rm -rf "$tmp"
    echo "$want" >"$BIN_DIR/.stamp"
    log "built in $(elapsed $((SECONDS - start)))"
  fi
  flock -u 9

  exec 9>"$UTIL_BIN_DIR/.build.lock"
  flock 9
  # Binaries of the layout before hack/cluster/k8s-<version>: unused.
  rm -f "$UTIL_BIN_DIR/kube-apiserver" "$UTIL_BIN_DIR/etcd" "$UTIL_BIN_DIR/.stamp"
  if [[ ! -x "$CLUSTERUTIL" ]]; then
    (cd "$UTIL_DIR" && go build -mod=readonly -o "$CLUSTERUTIL.tmp" ./clusterutil)
    mv "$CLUSTERUTIL.tmp" "$CLUSTERUTIL"
  fi
  flock -u 9
}

# ---------------------------------------------------------------- start / stop

is_running() {
  [[ -f "$RUN_FILE" ]] || return 1
  # shellcheck disable=SC1090
  (source "$RUN_FILE" && kill -0 "$APISERVER_PID" 2>/dev/null && kill -0 "$ETCD_PID" 2>/dev/null &&
    kill -0 "$CONTROLLER_MANAGER_PID" 2>/dev/null)
}

running_version() { # the KUBE_VERSION of the cluster in $RUN_FILE
  # shellcheck disable=SC1090
  (source "$RUN_FILE" && echo "${RUN_KUBE_VERSION:-}")
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
  local CONTROLLER_MANAGER_PID="" APISERVER_PID="" ETCD_PID="" TMP_DIR="" RUN_BIN_DIR=""
  # shellcheck disable=SC1090
  source "$RUN_FILE"
  # The binaries of the running cluster's version (before KUBE_VERSION, they
  # were in .cache/cluster/bin).
  local bin="${RUN_BIN_DIR:-$UTIL_BIN_DIR}"
  # The apiserver's clients first, then the apiserver, so that it does not
  # log etcd errors on its way out.
  stop_pid "$CONTROLLER_MANAGER_PID" kube-controller-manager "$bin/kube-controller-manager"
  stop_pid "$APISERVER_PID" kube-apiserver "$bin/kube-apiserver"
  stop_pid "$ETCD_PID" etcd "$bin/etcd"
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
  mapfile -t ports < <("$CLUSTERUTIL" freeports 3)
  etcd_client="${ports[0]}" etcd_peer="${ports[1]}" api_port="${ports[2]}"

  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/kapp-e2e-cluster.XXXXXX")"
  # Record what exists as soon as it exists, so stop can clean up after any failure.
  printf 'TMP_DIR=%q\nRUN_KUBE_VERSION=%q\nRUN_K8S_VERSION=%q\nRUN_BIN_DIR=%q\n' \
    "$tmp" "$KUBE_VERSION" "$K8S_VERSION" "$BIN_DIR" >"$RUN_FILE"

  "$CLUSTERUTIL" certs "$tmp/pki"

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
  if ! "$CLUSTERUTIL" wait -pid "$etcd_pid" "http://127.0.0.1:$etcd_client/health" 30s; then
    log "etcd did not become healthy; last log lines:"
    tail -n 20 "$LOG_DIR/etcd.log" >&2 || true
    exit 1
  fi

  printf 'ETCD_CLIENT_PORT=%q\nAPISERVER_PORT=%q\n' "$etcd_client" "$api_port" >>"$RUN_FILE"
  : >"$LOG_DIR/kube-apiserver.log"
  start_apiserver_process "$etcd_client" "$api_port" "$tmp" || exit 1
  "$CLUSTERUTIL" kubeconfig "$tmp/pki" "https://127.0.0.1:$api_port" "$tmp/admin.kubeconfig"

  log "starting kube-controller-manager $K8S_VERSION"
  # Its default controllers, as the admin (no per-controller service
  # accounts); the service-account token controller signs with the
  # apiserver's key and publishes the CA. No serving port, no leader
  # election, no cloud provider; without --cluster-signing-* files the CSR
  # signer does not run.
  "$BIN_DIR/kube-controller-manager" \
    --kubeconfig="$tmp/admin.kubeconfig" \
    --controllers='*' \
    --leader-elect=false \
    --secure-port=0 \
    --service-account-private-key-file="$tmp/pki/sa.key" \
    --root-ca-file="$tmp/pki/ca.crt" \
    --profiling=false \
    >"$LOG_DIR/kube-controller-manager.log" 2>&1 &
  local cm_pid=$!
  printf 'CONTROLLER_MANAGER_PID=%q\n' "$cm_pid" >>"$RUN_FILE"
  # Ready when its service-account controller has created the default
  # namespace's service account: its informers have synced.
  if ! "$CLUSTERUTIL" wait -pid "$cm_pid" -ca "$tmp/pki/ca.crt" -token-file "$tmp/pki/token" \
    "https://127.0.0.1:$api_port/api/v1/namespaces/default/serviceaccounts/default" 60s; then
    log "kube-controller-manager did not become ready; last log lines:"
    tail -n 30 "$LOG_DIR/kube-controller-manager.log" >&2 || true
    exit 1
  fi
  cp "$tmp/admin.kubeconfig" "$KUBECONFIG_OUT"
  trap - EXIT
}

# start_apiserver_process ETCD_CLIENT_PORT API_PORT TMP_DIR: starts
# kube-apiserver against etcd, records its pid in $RUN_FILE (replacing an
# earlier one) and waits until it is ready; non-zero when it is not.
start_apiserver_process() {
  local etcd_client="$1" api_port="$2" tmp="$3"
  log "starting kube-apiserver $K8S_VERSION on 127.0.0.1:$api_port"
  # Lean: no admission plugin but NamespaceLifecycle, ValidatingAdmissionPolicy
  # (the e2e tests prove the check's server-side dry run sees policies) and the
  # admission webhooks (the tests of kapp tools crd-upgrade-safety-webhook: the
  # apiserver calls it on loopback; without a webhook configuration they cost
  # nothing), no priority & fairness, no endpoint reconciler. RBAC with the
  # admin in system:masters. The admission webhooks' AdmissionConfiguration
  # (clusterutil certs) has the apiserver present a client certificate of
  # the cluster's CA (CN kube-apiserver-webhook-client) to every webhook that
  # asks for one: TestWebhookClientCertificate serves the webhook with
  # --client-ca-file; webhooks that ask for none are called as before.
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
    --enable-admission-plugins=NamespaceLifecycle,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,MutatingAdmissionWebhook \
    --disable-admission-plugins="$DISABLED_ADMISSION" \
    --admission-control-config-file="$tmp/pki/admission.yaml" \
    --enable-priority-and-fairness=false \
    --endpoint-reconciler-type=none \
    --profiling=false \
    >>"$LOG_DIR/kube-apiserver.log" 2>&1 &
  local api_pid=$!
  sed -i '/^APISERVER_PID=/d; /^APISERVER_URL=/d' "$RUN_FILE"
  printf 'APISERVER_PID=%q\nAPISERVER_URL=%q\n' "$api_pid" "https://127.0.0.1:$api_port" >>"$RUN_FILE"

  if ! "$CLUSTERUTIL" wait -pid "$api_pid" -ca "$tmp/pki/ca.crt" -token-file "$tmp/pki/token" \
    "https://127.0.0.1:$api_port/readyz" 90s; then
    log "kube-apiserver did not become ready; last log lines:"
    tail -n 30 "$LOG_DIR/kube-apiserver.log" >&2 || true
    return 1
  fi
}

# stop_apiserver kills the running cluster's kube-apiserver (SIGKILL: a
# crash, no graceful shutdown) and waits until it is gone.
stop_apiserver() {
  is_running || die "not running (hack/cluster.sh start)"
  local APISERVER_PID="" RUN_BIN_DIR="" exe i
  # shellcheck disable=SC1090
  source "$RUN_FILE"
  exe="$(readlink "/proc/$APISERVER_PID/exe" 2>/dev/null || true)"
  [[ "${exe% (deleted)}" == "$(readlink -f "$RUN_BIN_DIR/kube-apiserver")" ]] ||
    die "pid $APISERVER_PID runs ${exe:-an unknown binary}, not $RUN_BIN_DIR/kube-apiserver"
  kill -KILL "$APISERVER_PID"
  for ((i = 0; i < 100; i++)); do
    kill -0 "$APISERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  log "kube-apiserver ($APISERVER_PID) killed"
}

# start_apiserver starts the cluster's kube-apiserver again, as start did.
start_apiserver() {
  [[ -f "$RUN_FILE" ]] || die "no cluster recorded in $STATE_DIR"
  local APISERVER_PID="" RUN_BIN_DIR="" RUN_K8S_VERSION="" TMP_DIR="" ETCD_CLIENT_PORT="" APISERVER_PORT=""
  # shellcheck disable=SC1090
  source "$RUN_FILE"
  [[ -n "$ETCD_CLIENT_PORT" && -n "$APISERVER_PORT" ]] ||
    die "$RUN_FILE records no ports: a cluster started before stop-apiserver existed; restart it"
  ! kill -0 "$APISERVER_PID" 2>/dev/null || die "kube-apiserver ($APISERVER_PID) is running: stop-apiserver first"
  BIN_DIR="$RUN_BIN_DIR" K8S_VERSION="$RUN_K8S_VERSION"
  local started=$SECONDS
  start_apiserver_process "$ETCD_CLIENT_PORT" "$APISERVER_PORT" "$TMP_DIR" || die "kube-apiserver did not start again"
  log "kube-apiserver ready again in $((SECONDS - started))s"
}

DISABLED_ADMISSION="$(
  IFS=,
  a=(
    LimitRanger ServiceAccount TaintNodesByCondition PodSecurity Priority DefaultTolerationSeconds
    DefaultStorageClass StorageObjectInUseProtection PersistentVolumeClaimResize RuntimeClass
    CertificateApproval CertificateSigning ClusterTrustBundleAttest CertificateSubjectRestriction
    DefaultIngressClass ResourceQuota
  )
  echo "${a[*]}"
)"

start() {
  if is_running; then
    local running
    running="$(running_version)"
    [[ "$running" == "$KUBE_VERSION" ]] ||
      die "a Kubernetes ${running:-(unknown version)} cluster runs in $STATE_DIR, not $KUBE_VERSION: hack/cluster.sh stop first"
    log "Kubernetes $running already running; kubeconfig: $KUBECONFIG_OUT"
    return 0
  fi
  build
  mkdir -p "$STATE_DIR" "$LOG_DIR"
  stop >/dev/null 2>&1 || true # leftovers of a crashed run

  local started=$SECONDS attempt
  for attempt in 1 2 3 4 5; do
    if bash "${BASH_SOURCE[0]}" _start_once; then
      log "Kubernetes $K8S_VERSION ready in $((SECONDS - started))s; export KUBECONFIG=$KUBECONFIG_OUT"
      return 0
    fi
    log "attempt $attempt failed (a port may have been taken); retrying with new ports"
  done
  die "could not start the cluster; logs in $LOG_DIR"
}

status() {
  if is_running; then
    # shellcheck disable=SC1090
    (source "$RUN_FILE" && log "Kubernetes $RUN_K8S_VERSION (KUBE_VERSION=$RUN_KUBE_VERSION) running at $APISERVER_URL" \
      "(apiserver pid $APISERVER_PID, controller-manager pid $CONTROLLER_MANAGER_PID, etcd pid $ETCD_PID)")
    log "kubeconfig: $KUBECONFIG_OUT"
  else
    log "not running"
    return 1
  fi
}

test_env() {
  is_running || die "not running (hack/cluster.sh start)"
  # shellcheck disable=SC1090
  (source "$RUN_FILE" &&
    printf 'KUBECONFIG=%s\nKUBE_VERSION=%s\nKUBECTL=%s\n' "$KUBECONFIG_OUT" "$RUN_KUBE_VERSION" "$RUN_BIN_DIR/kubectl")
}

run() {
  [[ $# -gt 0 ]] || die "run needs a command"
  trap stop EXIT
  start
  KUBECONFIG="$KUBECONFIG_OUT" KUBE_VERSION="$KUBE_VERSION" "$@"
}

case "${1:-}" in
build) build ;;
start) start ;;
stop) stop ;;
status) status ;;
test-env) test_env ;;
stop-apiserver) stop_apiserver ;;
start-apiserver) start_apiserver ;;
restart-apiserver)
  stop_apiserver
  start_apiserver
  ;;
_start_once)
  select_version
  start_once
  ;;
run)
  shift
  run "$@"
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac

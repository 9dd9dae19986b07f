#!/usr/bin/env bash
# End-to-end tests: builds bin/kapp, starts the local cluster of
# hack/cluster.sh (etcd, kube-apiserver and kube-controller-manager from
# source) of Kubernetes $KUBE_VERSION (1.37 by default, or 1.35), runs test/e2e
# against it with KUBE_VERSION set to the cluster's version, and stops it
# again. A cluster already started with `hack/cluster.sh start` is reused and
# left running, which makes reruns fast: without KUBE_VERSION, whatever
# version it is; with KUBE_VERSION, only if it is that version.
#
# With --kapp-controller it also builds and starts kapp-controller
# (hack/kapp-controller.sh, with bin/kapp and the settings file
# test/e2e/testdata/kappctrl/controller-settings.yaml as
# KAPP_CRD_UPGRADE_SAFETY_CONFIG) for the TestKappController* tests, which
# skip without it; it reconciles the Apps of namespace default only. Beside
# it runs a second kapp-controller with upstream kapp v0.66.0 (built from the
# module, without our preflight) for the Apps of namespace kappctrl-upstream
# only, for TestWebhookBlocksUpstreamKappController (its state in
# .cache/kappctrl-upstream). Controllers already running are reused
# likewise.
#
# Usage: [KUBE_VERSION=1.37|1.35] hack/test-e2e.sh [--kapp-controller] [go test flags, e.g. -run TestFailMode -v]
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
# Upstream kapp, without our preflight (TestWebhookBlocksUpstreamKapp, and
# the second kapp-controller): $KAPP_UPSTREAM_BINARY, or built from the
# module ours is built on (carvel.dev/kapp at the version of go.mod).
if [[ -z "${KAPP_UPSTREAM_BINARY:-}" ]]; then
  KAPP_UPSTREAM_BINARY="$ROOT/.cache/kapp-upstream/kapp"
  # With its version set as its release builds set it (else it says "develop").
  CGO_ENABLED=0 go build -trimpath -o "$KAPP_UPSTREAM_BINARY" \
    -ldflags "-X carvel.dev/kapp/pkg/kapp/version.Version=$(go list -m -f '{{.Version}}' carvel.dev/kapp)" carvel.dev/kapp/cmd/kapp
fi
echo "upstream kapp: $KAPP_UPSTREAM_BINARY ($("$KAPP_UPSTREAM_BINARY" version | head -n 1))"

# Helm 4 and fluxapply (Flux's apply library), built from source through the
# Go module proxy, for the tests of real server-side apply clients
# (test/e2e/migrate_clients_test.go): HELM and FLUXAPPLY.
section "build the server-side apply clients"
mapfile -t ssaclients_env < <(hack/ssaclients.sh test-env)
[[ ${#ssaclients_env[@]} -eq 2 ]] || {
  echo "hack/ssaclients.sh test-env failed" >&2
  exit 1
}

# Helm 3 (helm.sh/helm/v3), built from source likewise (its own module and
# folder), for the tests of real clients against the webhook
# (test/e2e/webhook_clients_test.go): HELM3.
section "build Helm 3"
mapfile -t helm3_env < <(hack/helm3.sh test-env)
[[ ${#helm3_env[@]} -eq 1 ]] || {
  echo "hack/helm3.sh test-env failed" >&2
  exit 1
}

# The three builds of a real conversion webhook (controller-runtime,
# hub and spoke: lossless, lossy, failing), built from source likewise, for
# the tests of conversion (test/e2e/conversion_*_test.go): CONVWEBHOOK_DIR.
section "build the conversion webhooks"
mapfile -t convwebhook_env < <(hack/convwebhook.sh test-env)
[[ ${#convwebhook_env[@]} -eq 1 ]] || {
  echo "hack/convwebhook.sh test-env failed" >&2
  exit 1
}

# The registry tool of the Carvel package's tests
# (test/e2e/install_package_test.go): PKGREPO_TOOL.
section "build the registry tool"
mapfile -t pkgrepo_env < <(hack/pkgrepo.sh test-env)
[[ ${#pkgrepo_env[@]} -eq 1 ]] || {
  echo "hack/pkgrepo.sh test-env failed" >&2
  exit 1
}

# Stopped in reverse order on exit: kapp-controller (after the tests have
# deleted their Apps), then the cluster; only what this run started.
started_cluster=false started_controller=false started_upstream_controller=false
# The second controller's state, beside the first's.
upstream_state_dir="${KAPPCTRL_STATE_DIR:-$ROOT/.cache/kappctrl}-upstream"
upstream_namespace=kappctrl-upstream
cleanup() {
  local rc=$?
  if $started_upstream_controller; then
    KAPPCTRL_STATE_DIR="$upstream_state_dir" hack/kapp-controller.sh stop
  fi
  if $started_controller; then
    hack/kapp-controller.sh stop
  fi
  if $started_cluster; then
    if [[ $rc -ne 0 && -d .cache/cluster/logs ]]; then
      echo "--- last lines of the apiserver and controller-manager logs (.cache/cluster/logs) ---" >&2
      tail -n 20 .cache/cluster/logs/kube-apiserver.log >&2 || true
      tail -n 10 .cache/cluster/logs/kube-controller-manager.log >&2 || true
    fi
    hack/cluster.sh stop
  fi
  exit "$rc"
}
trap cleanup EXIT

section "start the cluster${KUBE_VERSION:+ (Kubernetes $KUBE_VERSION)}"
if hack/cluster.sh status >/dev/null 2>&1; then
  running="$(hack/cluster.sh test-env | sed -n 's/^KUBE_VERSION=//p')"
  if [[ -n "${KUBE_VERSION:-}" && "$running" != "$KUBE_VERSION" ]]; then
    echo "a Kubernetes $running cluster is running, not $KUBE_VERSION: hack/cluster.sh stop first" >&2
    exit 1
  fi
  echo "reusing the running Kubernetes $running cluster (hack/cluster.sh stop to stop it)"
else
  started_cluster=true
  hack/cluster.sh start
fi

# KUBECONFIG, KUBE_VERSION (of the running cluster: tests needing a newer one
# skip) and KUBECTL (its version's kubectl).
mapfile -t cluster_env < <(hack/cluster.sh test-env)
[[ ${#cluster_env[@]} -gt 0 ]] || {
  echo "hack/cluster.sh test-env said nothing" >&2
  exit 1
}
version="$(printf '%s\n' "${cluster_env[@]}" | sed -n 's/^KUBE_VERSION=//p')"
test_env=(KAPP_E2E_BINARY="$ROOT/bin/kapp" KAPP_UPSTREAM_BINARY="$KAPP_UPSTREAM_BINARY" "${cluster_env[@]}" "${ssaclients_env[@]}" "${helm3_env[@]}" "${pkgrepo_env[@]}" "${convwebhook_env[@]}")
if $kapp_controller; then
  section "start kapp-controller"
  if hack/kapp-controller.sh status >/dev/null 2>&1; then
    echo "reusing the running kapp-controller (hack/kapp-controller.sh stop to stop it)"
  else
    started_controller=true
    # Namespace default: the tests' Apps (test/e2e kcNamespace). The
    # namespace of the second controller must be no business of this one.
    KAPP_CRD_UPGRADE_SAFETY_CONFIG="$ROOT/test/e2e/testdata/kappctrl/controller-settings.yaml" KAPPCTRL_NAMESPACE=default \
      hack/kapp-controller.sh start
  fi
  # KAPPCTRL_E2E_*: what the tests need to know of it.
  mapfile -t controller_env < <(hack/kapp-controller.sh test-env)
  test_env+=("${controller_env[@]}")

  section "start kapp-controller with upstream kapp (namespace $upstream_namespace)"
  watched="$(printf '%s\n' "${controller_env[@]}" | sed -n 's/^KAPPCTRL_E2E_NAMESPACE=//p')"
  if [[ -z "$watched" || "$watched" == "$upstream_namespace" ]]; then
    # Both would reconcile the Apps of that namespace, and fight over them.
    echo "not started: the running kapp-controller reconciles the Apps of ${watched:-every namespace}" \
      "(hack/kapp-controller.sh stop, then rerun, to start one for namespace default only)"
  else
    if KAPPCTRL_STATE_DIR="$upstream_state_dir" hack/kapp-controller.sh status >/dev/null 2>&1; then
      echo "reusing the running kapp-controller of $upstream_state_dir (KAPPCTRL_STATE_DIR=$upstream_state_dir hack/kapp-controller.sh stop to stop it)"
    else
      started_upstream_controller=true
      KAPPCTRL_STATE_DIR="$upstream_state_dir" KAPPCTRL_KAPP="$KAPP_UPSTREAM_BINARY" KAPPCTRL_NAMESPACE="$upstream_namespace" \
        hack/kapp-controller.sh start
    fi
    # KAPPCTRL_E2E_UPSTREAM_*: the same of the second controller.
    mapfile -t upstream_env < <(KAPPCTRL_STATE_DIR="$upstream_state_dir" hack/kapp-controller.sh test-env | sed 's/^KAPPCTRL_E2E_/KAPPCTRL_E2E_UPSTREAM_/')
    test_env+=("${upstream_env[@]}")
  fi
fi

section "e2e tests against Kubernetes $version"
env "${test_env[@]}" go test ./test/e2e/... -count=1 -parallel 8 -timeout 20m "$@"

if ! $started_cluster; then
  echo "the cluster is still running"
fi
if $kapp_controller && ! $started_controller; then
  echo "kapp-controller is still running"
fi
if $kapp_controller && ! $started_upstream_controller && [[ -n "${upstream_env[*]:-}" ]]; then
  echo "the kapp-controller with upstream kapp is still running"
fi

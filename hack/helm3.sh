#!/usr/bin/env bash
# Helm 3's CLI (helm.sh/helm/v3/cmd/helm, v3.22.0), for the end-to-end tests
# of real clients against the admission webhook
# (test/e2e/webhook_clients_test.go; Helm 4 comes from hack/ssaclients.sh),
# built from source through the Go module proxy (module hack/helm3, pinned
# by its committed go.sum; k8s.io/* at versions the proxy serves).
#
# Usage: hack/helm3.sh build      build helm if the pins changed
#        hack/helm3.sh test-env   build, then print, as a KEY=value line, what
#                                 test/e2e reads: HELM3
#
# Files (git-ignored; its own folder, apart from .cache/ssaclients):
#   .cache/helm3/bin/   helm and its stamp
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOL=helm3
MODULE_DIR="$ROOT/hack/helm3"
BIN_DIR="$ROOT/.cache/helm3/bin"

# shellcheck source=hack/lib/gotool.sh
source "$ROOT/hack/lib/gotool.sh" # BUILD_FLAGS, log, die, build_lock, go_build_stamped, gotool_main

# The version helm reports (from go.mod), as Helm's release builds set it.
ldflags() {
  printf -- '-s -w -X helm.sh/helm/v3/internal/version.version=%s' \
    "$(cd "$MODULE_DIR" && go list -mod=readonly -m -f '{{.Version}}' helm.sh/helm/v3)"
}

# The binary is rebuilt when the pins, the Go toolchain or the build flags
# change; a new one must run before it replaces the old one.
build() {
  build_lock "$BIN_DIR" "helm 3"
  BUILD_CHECK=helm_runs go_build_stamped "helm 3" "$MODULE_DIR" "$BIN_DIR" -- helm.sh/helm/v3/cmd/helm
  build_unlock
}

helm_runs() { # helm_runs DIR: the helm built in DIR runs
  "$1/helm" version --short >/dev/null
}

test_env() {
  build
  printf 'HELM3=%s\n' "$BIN_DIR/helm"
}

gotool_main "$@"

#!/usr/bin/env bash
# Real clients that write with server-side apply, for the end-to-end tests
# of issue 31 (test/e2e/migrate_clients_test.go): Helm 4's CLI
# (helm.sh/helm/v4/cmd/helm) and fluxapply (Flux's apply library,
# github.com/fluxcd/pkg/ssa, as kustomize-controller runs it), built from
# source through the Go module proxy (module hack/ssaclients, pinned by its
# committed go.sum).
#
# Usage: hack/ssaclients.sh build      build the binaries if the pins or the sources changed
#        hack/ssaclients.sh test-env   build, then print, as KEY=value lines, what test/e2e
#                                      reads: HELM, FLUXAPPLY
#
# Files (git-ignored):
#   .cache/ssaclients/bin/   helm, fluxapply and their stamp
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOL=ssaclients
MODULE_DIR="$ROOT/hack/ssaclients"
BIN_DIR="$ROOT/.cache/ssaclients/bin"

# shellcheck source=hack/lib/gotool.sh
source "$ROOT/hack/lib/gotool.sh" # BUILD_FLAGS, log, die, build_lock, go_build_stamped, gotool_main

# The version helm reports (from go.mod), as Helm's release builds set it.
ldflags() {
  printf -- '-s -w -X helm.sh/helm/v4/internal/version.version=%s' \
    "$(cd "$MODULE_DIR" && go list -mod=readonly -m -f '{{.Version}}' helm.sh/helm/v4)"
}

# The binaries are rebuilt when the pins, fluxapply's source, the Go toolchain
# or the build flags change. One go build for both shares the work of their
# common dependencies (client-go, apimachinery, controller-runtime).
build() {
  build_lock "$BIN_DIR" "helm and fluxapply"
  go_build_stamped "helm and fluxapply" "$MODULE_DIR" "$BIN_DIR" "$MODULE_DIR"/fluxapply/*.go -- \
    helm.sh/helm/v4/cmd/helm ./fluxapply
  build_unlock
}

test_env() {
  build
  printf 'HELM=%s\nFLUXAPPLY=%s\n' "$BIN_DIR/helm" "$BIN_DIR/fluxapply"
}

gotool_main "$@"

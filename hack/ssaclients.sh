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
MODULE_DIR="$ROOT/hack/ssaclients"
BIN_DIR="$ROOT/.cache/ssaclients/bin"

# Static, trimmed, with the version helm reports (from go.mod), as Helm's
# release builds set it.
BUILD_FLAGS=(-mod=readonly -trimpath)
export CGO_ENABLED=0
ldflags() {
  printf -- '-s -w -X helm.sh/helm/v4/internal/version.version=%s' \
    "$(cd "$MODULE_DIR" && go list -mod=readonly -m -f '{{.Version}}' helm.sh/helm/v4)"
}

START=$SECONDS
log() { printf '[ssaclients] %s (%ss)\n' "$*" "$((SECONDS - START))" >&2; }
die() {
  log "error: $*"
  exit 1
}

# shellcheck source=hack/lib/build.sh
source "$ROOT/hack/lib/build.sh" # go_build_progress, elapsed

# The binaries are rebuilt when this changes: the pins, fluxapply's source,
# the Go toolchain or the build flags.
stamp() {
  {
    cat "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" "$MODULE_DIR"/fluxapply/*.go
    go env GOVERSION GOOS GOARCH
    echo "${BUILD_FLAGS[*]} CGO_ENABLED=$CGO_ENABLED"
    declare -f ldflags
  } | sha256sum | cut -d' ' -f1
}

build() {
  mkdir -p "$BIN_DIR"
  # One build at a time (hack/test.sh builds in the background while
  # hack/test-e2e.sh may ask for the binaries).
  exec 9>"$BIN_DIR/.build.lock"
  flock -n 9 || {
    log "waiting for another build of helm and fluxapply to finish"
    flock 9
  }
  local want have
  want="$(stamp)"
  have="$(cat "$BIN_DIR/.stamp" 2>/dev/null || true)"
  if [[ "$want" == "$have" && -x "$BIN_DIR/helm" && -x "$BIN_DIR/fluxapply" ]]; then
    log "helm and fluxapply are up to date ($BIN_DIR)"
  else
    log "building helm and fluxapply from source through the Go module proxy (on a cold cache a few minutes on 2 cores; once only)"
    local start=$SECONDS tmp flags
    flags="$(ldflags)"
    tmp="$(mktemp -d "$BIN_DIR/.build.XXXXXX")"
    # One go build for both shares the work of their common dependencies
    # (client-go, apimachinery, controller-runtime).
    (
      cd "$MODULE_DIR" &&
        go_build_progress "helm and fluxapply" "$tmp/build.log" "${BUILD_FLAGS[@]}" -ldflags "$flags" -o "$tmp/" \
          helm.sh/helm/v4/cmd/helm ./fluxapply
    ) || {
      rm -rf "$tmp"
      die "build failed"
    }
    mv -f "$tmp/helm" "$tmp/fluxapply" "$BIN_DIR/"
    rm -rf "$tmp"
    echo "$want" >"$BIN_DIR/.stamp"
    log "built in $(elapsed $((SECONDS - start)))"
  fi
  flock -u 9
}

test_env() {
  build
  printf 'HELM=%s\nFLUXAPPLY=%s\n' "$BIN_DIR/helm" "$BIN_DIR/fluxapply"
}

case "${1:-}" in
build) build ;;
test-env) test_env ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac

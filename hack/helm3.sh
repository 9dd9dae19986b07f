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
MODULE_DIR="$ROOT/hack/helm3"
BIN_DIR="$ROOT/.cache/helm3/bin"

# Static, trimmed, with the version helm reports (from go.mod), as Helm's
# release builds set it.
BUILD_FLAGS=(-mod=readonly -trimpath)
export CGO_ENABLED=0
ldflags() {
  printf -- '-s -w -X helm.sh/helm/v3/internal/version.version=%s' \
    "$(cd "$MODULE_DIR" && go list -mod=readonly -m -f '{{.Version}}' helm.sh/helm/v3)"
}

START=$SECONDS
log() { printf '[helm3] %s (%ss)\n' "$*" "$((SECONDS - START))" >&2; }
die() {
  log "error: $*"
  exit 1
}

# shellcheck source=hack/lib/build.sh
source "$ROOT/hack/lib/build.sh" # go_build_progress, elapsed

# The binary is rebuilt when this changes: the pins, the Go toolchain or the
# build flags.
stamp() {
  {
    cat "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum"
    go env GOVERSION GOOS GOARCH
    echo "${BUILD_FLAGS[*]} CGO_ENABLED=$CGO_ENABLED"
    declare -f ldflags
  } | sha256sum | cut -d' ' -f1
}

build() {
  mkdir -p "$BIN_DIR"
  # One build at a time (hack/test.sh builds in the background while
  # hack/test-e2e.sh may ask for the binary).
  exec 9>"$BIN_DIR/.build.lock"
  flock -n 9 || {
    log "waiting for another build of helm 3 to finish"
    flock 9
  }
  local want have
  want="$(stamp)"
  have="$(cat "$BIN_DIR/.stamp" 2>/dev/null || true)"
  if [[ "$want" == "$have" && -x "$BIN_DIR/helm" ]]; then
    log "helm 3 is up to date ($BIN_DIR)"
  else
    log "building helm 3 from source through the Go module proxy (on a cold cache a few minutes on 2 cores; once only)"
    local start=$SECONDS tmp flags
    flags="$(ldflags)"
    tmp="$(mktemp -d "$BIN_DIR/.build.XXXXXX")"
    (
      cd "$MODULE_DIR" &&
        go_build_progress "helm 3" "$tmp/build.log" "${BUILD_FLAGS[@]}" -ldflags "$flags" -o "$tmp/helm" \
          helm.sh/helm/v3/cmd/helm
    ) || {
      rm -rf "$tmp"
      die "build failed"
    }
    "$tmp/helm" version --short >/dev/null || {
      rm -rf "$tmp"
      die "the built helm does not run"
    }
    mv -f "$tmp/helm" "$BIN_DIR/"
    rm -rf "$tmp"
    echo "$want" >"$BIN_DIR/.stamp"
    log "built in $(elapsed $((SECONDS - start)))"
  fi
  flock -u 9
}

test_env() {
  build
  printf 'HELM3=%s\n' "$BIN_DIR/helm"
}

case "${1:-}" in
build) build ;;
test-env) test_env ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac

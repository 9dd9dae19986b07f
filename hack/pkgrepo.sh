#!/usr/bin/env bash
# The registry tool of the end-to-end tests of the Carvel package
# (test/e2e/install_package_test.go): release-image of module hack/release
# (the same code that builds a release's package bundles), built into
# .cache/pkgrepo/bin. The tests run it to serve an OCI registry on loopback
# (go-containerregistry's pkg/registry, in memory) and to push the package
# repository bundle, the package bundle and a stand-in for the webhook's
# image into it.
#
# Usage: hack/pkgrepo.sh build      build it if the module or the Go version changed
#        hack/pkgrepo.sh test-env   build, then print what test/e2e reads:
#                                   PKGREPO_TOOL (its path)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULE_DIR="$ROOT/hack/release"
BIN_DIR="$ROOT/.cache/pkgrepo/bin"

START=$SECONDS
log() { printf '[pkgrepo] %s (%ss)\n' "$*" "$((SECONDS - START))" >&2; }

# shellcheck source=hack/lib/build.sh
source "$ROOT/hack/lib/build.sh" # go_build_progress

build() {
  mkdir -p "$BIN_DIR"
  exec 9>"$BIN_DIR/.build.lock"
  flock 9
  local want have
  want="$({
    cat "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" "$MODULE_DIR"/*.go
    go env GOVERSION GOOS GOARCH
  } | sha256sum | cut -d' ' -f1)"
  have="$(cat "$BIN_DIR/.stamp" 2>/dev/null || true)"
  if [[ "$want" != "$have" || ! -x "$BIN_DIR/release-image" ]]; then
    log "building release-image (module hack/release)"
    local tmp
    tmp="$(mktemp -d "$BIN_DIR/.build.XXXXXX")"
    (cd "$MODULE_DIR" && CGO_ENABLED=0 go_build_progress "release-image" "$tmp/build.log" -mod=readonly -trimpath -o "$tmp/release-image" .) || {
      rm -rf "$tmp"
      log "error: building release-image failed"
      exit 1
    }
    mv -f "$tmp/release-image" "$BIN_DIR/"
    rm -rf "$tmp"
    echo "$want" >"$BIN_DIR/.stamp"
    log "built"
  fi
  flock -u 9
}

case "${1:-}" in
build) build ;;
test-env)
  build
  echo "PKGREPO_TOOL=$BIN_DIR/release-image"
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac

# Sourced by hack/ssaclients.sh and hack/helm3.sh: scripts that build Go
# tools for the end-to-end tests from source through the Go module proxy,
# from a module under hack/ pinned by its committed go.sum. The script sets
# ROOT and TOOL (its log prefix) before sourcing this, defines ldflags (the
# linker flags, a part of the stamp), build and test_env, and ends with
# gotool_main "$@".

# Static and trimmed, as the tools' release builds are.
BUILD_FLAGS=(-mod=readonly -trimpath)
export CGO_ENABLED=0

START=$SECONDS
log() { printf '[%s] %s (%ss)\n' "$TOOL" "$*" "$((SECONDS - START))" >&2; }
die() {
  log "error: $*"
  exit 1
}

# shellcheck source=hack/lib/build.sh
source "$ROOT/hack/lib/build.sh" # build_lock, go_build_stamped

# gotool_main COMMAND: build, test-env, or else the script's usage (its
# header comment).
gotool_main() {
  case "${1:-}" in
  build) build ;;
  test-env) test_env ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
  esac
}

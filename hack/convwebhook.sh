#!/usr/bin/env bash
# Three releases of a real conversion webhook, for the end-to-end tests of
# the conversion probe (issue 39, test/e2e/conversion_*_test.go): a
# controller-runtime hub-and-spoke webhook (sigs.k8s.io/controller-runtime
# v0.25.2, pkg/webhook/conversion) for a Widget kind, v1 the spoke and v2
# the hub, served over TLS on loopback. Built from source through the Go
# module proxy (module hack/convwebhook, pinned by its committed go.sum):
#
#   lossless   v1 spec.size <-> v2 spec.dimensions, a true round trip
#   lossy      v1 spec.color has no home in v2 and is not stashed: dropped
#   failing    spec.replicas is int-or-string in the CRD but an int in the
#              Go types: a review holding an object with a string fails
#
# Each is a main package of its own (its own Go types and conversion
# functions, like a release of an operator), so one go build makes all
# three and a binary cannot run another build's conversion by a flag.
#
# Flags of each binary: --tls-cert-file, --tls-private-key-file (required),
# --listen (default 127.0.0.1:0), --group (default e2e.example.com), --kind
# (default Widget); it prints "serving conversion reviews on
# https://ADDR/convert ..." and one line per review on stderr.
#
# Usage: hack/convwebhook.sh build      build the binaries if the pins or the sources changed
#        hack/convwebhook.sh test-env   build, then print, as a KEY=value line, what test/e2e
#                                       reads: CONVWEBHOOK_DIR (the folder of the three binaries)
#
# Files (git-ignored):
#   .cache/convwebhook/bin/   lossless, lossy, failing and their stamp
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOL=convwebhook
MODULE_DIR="$ROOT/hack/convwebhook"
BIN_DIR="$ROOT/.cache/convwebhook/bin"

# shellcheck source=hack/lib/gotool.sh
source "$ROOT/hack/lib/gotool.sh" # BUILD_FLAGS, log, die, build_lock, go_build_stamped, gotool_main

ldflags() { printf -- '-s -w'; }

# Rebuilt when the pins, the sources, the Go toolchain or the build flags
# change; the new binaries must start before they replace the old ones.
build() {
  build_lock "$BIN_DIR" "the conversion webhooks"
  BUILD_CHECK=webhooks_run go_build_stamped "the conversion webhooks" "$MODULE_DIR" "$BIN_DIR" \
    "$MODULE_DIR"/widget/*.go "$MODULE_DIR"/lossless/*.go "$MODULE_DIR"/lossy/*.go "$MODULE_DIR"/failing/*.go -- \
    ./lossless ./lossy ./failing
  build_unlock
}

# webhooks_run DIR: each binary built in DIR answers its usage (exit 2).
webhooks_run() {
  local b rc
  for b in lossless lossy failing; do
    rc=0
    "$1/$b" >/dev/null 2>&1 || rc=$?
    [[ $rc -eq 2 ]] || return 1
  done
}

test_env() {
  build
  printf 'CONVWEBHOOK_DIR=%s\n' "$BIN_DIR"
}

gotool_main "$@"

#!/usr/bin/env bash
# The linter beyond go vet: staticcheck (honnef.co/go/tools), built from
# source through the Go module proxy (module hack/lint, pinned by its go.sum),
# run on the main module and on the Go code of the hack/ modules that
# hack/test.sh vets; then `go mod tidy -diff` on every module of the
# repository (the main one and each go.mod under hack/): a go.mod or go.sum
# that tidy would change fails, with tidy's diff.
#
# The checks are staticcheck's defaults (no -checks flag). A check to turn off
# goes in a staticcheck.conf at the repository root (staticcheck reads it for
# every package below it, the hack/ modules' too), with a one-line reason;
# none is turned off today, so there is none.
#
# The first run on a machine type-checks and analyses every dependency (about
# 7 minutes on 2 cores); staticcheck caches that in its user cache directory
# ($STATICCHECK_CACHE, default ~/.cache/staticcheck), and later runs take
# seconds.
#
# Usage: hack/lint.sh           build staticcheck if the pins changed, run it, check tidiness
#        hack/lint.sh build     only build it
#        hack/lint.sh tidy      only check that every module is tidy
#
# Every module is checked even when one has findings; the exit status is
# non-zero if any had one.
#
# Files (git-ignored):
#   .cache/bin/staticcheck          the binary
#   .cache/bin/.stamp-staticcheck   what it was built from (see stamp_of)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULE_DIR="$ROOT/hack/lint"
BIN_DIR="$ROOT/.cache/bin"
STATICCHECK="$BIN_DIR/staticcheck"

log() { printf '[lint] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# shellcheck source=hack/lib/build.sh
source "$ROOT/hack/lib/build.sh" # go_build_progress, elapsed

# The binary is rebuilt when this changes: the pins (go.mod, go.sum) or the
# Go toolchain (staticcheck must be built by a Go at least as new as the code
# it checks).
stamp_of() { # stamp_of FILE... -> hash of the files and the go version
  {
    cat "$@"
    go env GOVERSION GOOS GOARCH
  } | sha256sum | cut -d' ' -f1
}

build() {
  mkdir -p "$BIN_DIR"
  # One build at a time (two test runs may race on a fresh clone).
  exec 9>"$BIN_DIR/.build-staticcheck.lock"
  flock 9

  local want have
  want="$(stamp_of "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum")"
  have="$(cat "$BIN_DIR/.stamp-staticcheck" 2>/dev/null || true)"
  if [[ "$want" == "$have" && -x "$STATICCHECK" ]]; then
    log "staticcheck is up to date ($STATICCHECK)"
  else
    local version start=$SECONDS tmp
    version="$(cd "$MODULE_DIR" && go list -mod=readonly -m -f '{{.Version}}' honnef.co/go/tools)"
    log "building staticcheck $version from source through the Go module proxy"
    tmp="$(mktemp -d "$BIN_DIR/.build-staticcheck.XXXXXX")"
    # -mod=readonly: the committed go.sum is the pin. (&& because set -e
    # does not apply inside the left-hand side of ||.)
    (
      cd "$MODULE_DIR" &&
        go_build_progress "staticcheck" "$tmp/staticcheck.log" \
          -mod=readonly -trimpath -o "$tmp/staticcheck" honnef.co/go/tools/cmd/staticcheck
    ) || {
      rm -rf "$tmp"
      die "build failed"
    }
    mv -f "$tmp/staticcheck" "$STATICCHECK"
    rm -rf "$tmp"
    echo "$want" >"$BIN_DIR/.stamp-staticcheck"
    log "built in $(elapsed $((SECONDS - start)))"
  fi
  flock -u 9
}

# What is checked: DIR (a module's root, relative to ROOT) and its package
# patterns. Keep in step with the "go vet" section of hack/test.sh.
TARGETS=(
  ". ./..."
  "hack/cluster ./clusterutil/..."
  "hack/bench ./..."
  "hack/kappctrl ./..."
  "hack/ssaclients ./..."
  "hack/convwebhook ./..."
  "hack/release ./..."
)

lint() {
  local failed=() target dir patterns prefix
  for target in "${TARGETS[@]}"; do
    read -r dir patterns <<<"$target"
    log "staticcheck $patterns (in $dir)"
    # staticcheck names files relative to where it runs: make them relative
    # to the repository root. (pipefail: the status is staticcheck's.)
    prefix=""
    [[ "$dir" == "." ]] || prefix="$dir/"
    # shellcheck disable=SC2086 # patterns is a list
    (cd "$ROOT/$dir" && "$STATICCHECK" $patterns) |
      sed -E "s|^([^/ ][^: ]*\.go:[0-9])|${prefix}\1|" ||
      failed+=("$dir")
  done
  if ((${#failed[@]} > 0)); then
    die "staticcheck found problems in: ${failed[*]}"
  fi
}

# tidy checks that go mod tidy would change no go.mod or go.sum (-diff
# changes nothing and prints what it would change).
tidy() {
  local failed=() mod dir
  while read -r mod; do
    dir="$(dirname "$mod")"
    log "go mod tidy -diff (in $dir)"
    (cd "$ROOT/$dir" && go mod tidy -diff) || failed+=("$dir")
  done < <(cd "$ROOT" && git ls-files -- go.mod '*/go.mod')
  if ((${#failed[@]} > 0)); then
    die "go mod tidy would change: ${failed[*]} (run go mod tidy there)"
  fi
}

case "${1:-}" in
"")
  build
  status=0
  (lint) || status=$? # a subshell each: die leaves only it, so both run
  (tidy) || status=$?
  exit "$status"
  ;;
build) build ;;
tidy) tidy ;;
*) die "usage: hack/lint.sh [build|tidy]" ;;
esac

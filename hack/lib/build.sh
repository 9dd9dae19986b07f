# Sourced by the hack/ scripts that build: long builds say what they are
# doing while they run, and binaries built from a module's pins are rebuilt
# only when their stamp changes. Uses the caller's log and die functions.

# elapsed SECONDS -> "4m05s"
elapsed() {
  printf '%dm%02ds' "$(($1 / 60))" "$(($1 % 60))"
}

# ticker_start WHAT [LOG]: until ticker_stop, every $BUILD_TICK seconds
# (default 30) a line naming WHAT and the elapsed time; with LOG, the output
# of a go build -v, also how many packages it has compiled and the last one.
ticker_start() {
  local what="$1" out="${2:-}" start=$SECONDS
  (
    while sleep "${BUILD_TICK:-30}"; do
      local n=0 last=""
      if [[ -n "$out" ]]; then
        n="$(grep -c . "$out" 2>/dev/null || true)"
        last="$(tail -n 1 "$out" 2>/dev/null || true)"
      fi
      if [[ -z "$out" ]]; then
        log "building $what: $(elapsed $((SECONDS - start))) so far"
      elif [[ "${n:-0}" -eq 0 ]]; then
        log "building $what: $(elapsed $((SECONDS - start))) so far, fetching modules from the Go module proxy"
      else
        log "building $what: $(elapsed $((SECONDS - start))) so far, $n packages compiled (last: $last)"
      fi
    done
  ) &
  TICKER_PID=$!
}

ticker_stop() {
  if [[ -n "${TICKER_PID:-}" ]]; then
    kill "$TICKER_PID" 2>/dev/null || true
    wait "$TICKER_PID" 2>/dev/null || true
    TICKER_PID=""
  fi
}

# go_build_progress WHAT LOG [GO BUILD ARGS...]: go build -v in the current
# directory with its output in LOG and a ticker line every $BUILD_TICK
# seconds (see ticker_start). On failure the end of LOG is printed.
go_build_progress() {
  local what="$1" out="$2" rc=0
  shift 2
  : >"$out"
  ticker_start "$what" "$out"
  go build -v "$@" >"$out" 2>&1 || rc=$?
  ticker_stop
  if [[ $rc -ne 0 ]]; then
    tail -n 40 "$out" >&2
  fi
  return "$rc"
}

# build_stamp FILE... -> the hash a stamped build is rebuilt on: FILE..., the
# Go toolchain and the caller's build flags (BUILD_FLAGS, CGO_ENABLED and its
# ldflags function).
build_stamp() {
  {
    cat "$@"
    go env GOVERSION GOOS GOARCH
    echo "${BUILD_FLAGS[*]} CGO_ENABLED=$CGO_ENABLED"
    declare -f ldflags
  } | sha256sum | cut -d' ' -f1
}

# build_lock DIR WHAT: one build at a time in DIR (hack/test.sh builds in the
# background while hack/test-e2e.sh may ask for the binaries): takes
# DIR/.build.lock on file descriptor 9, saying so when it waits for another
# build of WHAT. build_unlock releases it.
build_lock() {
  mkdir -p "$1"
  exec 9>"$1/.build.lock"
  flock -n 9 || {
    log "waiting for another build of $2 to finish"
    flock 9
  }
}

build_unlock() {
  flock -u 9
}

# go_build_stamped WHAT MODULE_DIR BIN_DIR [FILE...] -- [NAME=]PACKAGE...
# builds PACKAGE... of the Go module in MODULE_DIR into BIN_DIR (each binary
# named after its package's last element, or NAME), unless BIN_DIR/.stamp
# holds the build_stamp of MODULE_DIR's go.mod, go.sum and FILE... and every
# binary is there. One go build for all shares the work of their common
# dependencies; with the caller's BUILD_FLAGS and -ldflags "$(ldflags)". When
# the caller sets BUILD_CHECK, that command runs with the directory of the
# new binaries before they replace the old ones. The caller holds
# build_lock BIN_DIR.
go_build_stamped() {
  local what="$1" module_dir="$2" bin_dir="$3" files=() pkgs=() names=() arg
  shift 3
  while [[ $# -gt 0 && "$1" != "--" ]]; do
    files+=("$1")
    shift
  done
  shift # --
  for arg in "$@"; do
    if [[ "$arg" == *=* ]]; then
      names+=("${arg%%=*}")
      pkgs+=("${arg#*=}")
    else
      names+=("${arg##*/}")
      pkgs+=("$arg")
    fi
  done

  local want have name up_to_date=1
  want="$(build_stamp "$module_dir/go.mod" "$module_dir/go.sum" "${files[@]}")"
  have="$(cat "$bin_dir/.stamp" 2>/dev/null || true)"
  [[ "$want" == "$have" ]] || up_to_date=0
  for name in "${names[@]}"; do
    [[ -x "$bin_dir/$name" ]] || up_to_date=0
  done
  if [[ $up_to_date -eq 1 ]]; then
    if [[ ${#names[@]} -eq 1 ]]; then
      log "$what is up to date ($bin_dir)"
    else
      log "$what are up to date ($bin_dir)"
    fi
    return 0
  fi

  log "building $what from source through the Go module proxy (on a cold cache a few minutes on 2 cores; once only)"
  local start=$SECONDS tmp flags i
  flags="$(ldflags)"
  tmp="$(mktemp -d "$bin_dir/.build.XXXXXX")"
  # (&& because set -e does not apply inside the left-hand side of ||.)
  (
    cd "$module_dir" &&
      go_build_progress "$what" "$tmp/build.log" "${BUILD_FLAGS[@]}" -ldflags "$flags" -o "$tmp/" "${pkgs[@]}"
  ) || {
    rm -rf "$tmp"
    die "build failed"
  }
  if [[ -n "${BUILD_CHECK:-}" ]] && ! "$BUILD_CHECK" "$tmp"; then
    rm -rf "$tmp"
    die "the built $what does not run"
  fi
  for i in "${!pkgs[@]}"; do
    mv -f "$tmp/${pkgs[$i]##*/}" "$bin_dir/${names[$i]}"
  done
  rm -rf "$tmp"
  echo "$want" >"$bin_dir/.stamp"
  log "built in $(elapsed $((SECONDS - start)))"
}

# Sourced by hack/cluster.sh, hack/kapp-controller.sh and hack/demo.sh: long
# builds say what they are doing while they run. Uses the caller's log
# function.

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

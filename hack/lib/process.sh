# Sourced by hack/cluster.sh and hack/kapp-controller.sh: stopping what they
# started. Uses the caller's log function and BIN_DIR.

# stop_pid PID NAME [EXE]: SIGTERM, wait up to 15s, then SIGKILL. Only ever
# signals a process of EXE (default $BIN_DIR/NAME): a stale pid file may name
# a reused pid. /proc/PID/exe has symlinks resolved (a worktree's bin/ may
# link to another checkout's), so EXE is resolved too.
stop_pid() {
  local pid="$1" name="$2" want="${3:-$BIN_DIR/$2}" i exe
  [[ -n "$pid" ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
  want="$(readlink -f "$want" 2>/dev/null || echo "$want")"
  if [[ "${exe% (deleted)}" != "$want" ]]; then
    log "not stopping pid $pid: it runs ${exe:-an unknown binary}, not $want"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  log "$name ($pid) did not stop on SIGTERM; killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

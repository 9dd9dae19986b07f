#!/usr/bin/env bash
# The newcomer's first command: a guided tour of the CRDUpgradeSafety check,
# first without a cluster, then on a throwaway local cluster.
#
#   1. builds bin/kapp
#   2. without any cluster: compares the example CRD's releases with
#      `kapp tools crd-upgrade-safety` (a safe one, an unsafe one: exit 3)
#   3. builds (once) and starts a local cluster: etcd, kube-apiserver and
#      kube-controller-manager from source (Kubernetes $KUBE_VERSION, default 1.37)
#   4. deploys the Widget CRD of examples/crd-upgrade with two widgets
#   5. deploys a safe upgrade of the CRD: applied
#   6. deploys an unsafe upgrade: blocked, the cluster is unchanged
#   7. checks the same upgrade with `kapp tools crd-upgrade-safety` against the cluster (exit 3)
#   8. deploys the same unsafe upgrade in mode warn: applied, with warnings
#   9. stops the cluster (also when anything above fails)
#
# Usage: hack/demo.sh
#
# The first run compiles kapp (a few minutes on a cold Go cache), shows
# step 2, then compiles the control plane (about 15 minutes on 2 cores,
# cold); both say how far they are every 30 seconds. Later runs take
# about a minute.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
EX=examples/crd-upgrade
APP=widgets

# A cluster of its own, so the demo never touches one started for tests.
export CLUSTER_STATE_DIR="$ROOT/.cache/cluster/demo"
export KUBECONFIG="$CLUSTER_STATE_DIR/kubeconfig"

if [[ -t 1 ]]; then
  BOLD=$'\e[1m' DIM=$'\e[2m' GREEN=$'\e[32m' RED=$'\e[31m' RESET=$'\e[0m'
else
  BOLD="" DIM="" GREEN="" RED="" RESET=""
fi
step=0
heading() {
  step=$((step + 1))
  printf '\n%s==================================================================%s\n' "$BOLD" "$RESET"
  printf '%s %d. %s%s\n' "$BOLD" "$step" "$*" "$RESET"
  printf '%s==================================================================%s\n' "$BOLD" "$RESET"
}
say() { printf '%s\n' "$*"; }
ok() { printf '%s>>> %s%s\n' "$GREEN" "$*" "$RESET"; }
fail() {
  printf '%s>>> %s%s\n' "$RED" "$*" "$RESET" >&2
  exit 1
}
run() { # show, then run, a command
  printf '%s$ %s%s\n' "$DIM" "$*" "$RESET"
  "$@"
}
kapp() { run bin/kapp "$@"; }

# The app's live objects (CRD and widgets) and the live CRD alone, as YAML,
# to show that a blocked deploy changed nothing.
live_app() { # one object per line, sorted: kapp lists them in no fixed order
  bin/kapp inspect -a "$APP" --raw --tty=false 2>/dev/null |
    awk '/^---$/ { if (d != "") print d; d = ""; next } { d = d (d == "" ? "" : "\\n") $0 } END { if (d != "") print d }' |
    sort
}
live_crd() {
  bin/kapp inspect -a "$APP" --raw --tty=false --filter-kind CustomResourceDefinition 2>/dev/null
}
live_enum() { # the live enum of spec.size, as [a, b, c]
  live_crd | awk '/enum:/ { e = 1; next } e && /^ *- / { sub(/^ *- /, ""); s = s (s ? ", " : "") $0; next } e { exit } END { print "[" s "]" }'
}

log() { printf '[demo] %s\n' "$*" >&2; }
# shellcheck source=hack/lib/build.sh
source "$ROOT/hack/lib/build.sh" # ticker_start, ticker_stop, elapsed

heading "Build kapp"
say "The first run compiles kapp and its Kubernetes libraries: a few minutes on a cold Go cache."
trap 'ticker_stop' EXIT
ticker_start "kapp"
if [[ -x hack/build.sh ]]; then
  run hack/build.sh
else
  run go build -o bin/kapp ./cmd/kapp
fi
ticker_stop
run bin/kapp version

heading "Without a cluster: compare two releases of a CRD"
say "kapp tools crd-upgrade-safety compares old and new CRD files, as a CI job does."
say "Release 1 -> 2 adds an optional field and an enum value, raises a maximum: safe."
kapp tools crd-upgrade-safety -f "$EX/crd-v1.yaml" --file2 "$EX/crd-v2-safe.yaml"
say ""
say "Release 2 -> 3 removes an enum value and a field, makes a field required and"
say "lowers a maximum: unsafe, exit status 3. With --objects, sample widgets show"
say "what each finding would do to stored data."
status=0
kapp tools crd-upgrade-safety -f "$EX/crd-v2-safe.yaml" --file2 "$EX/crd-v3-unsafe.yaml" --objects "$EX/widgets.yaml" || status=$?
[[ $status -eq 3 ]] || fail "expected exit status 3, got $status"
ok "exit status $status. In CI: --git-ref origin/main, --output github|sarif|markdown|json (docs/ci.md)."

heading "Start a local cluster (etcd, kube-apiserver, kube-controller-manager, built from source)"
if [[ ! -x ".cache/cluster/${KUBE_VERSION:-1.37}/bin/kube-apiserver" ]]; then
  say "The first run builds the control plane from the Go module proxy: about"
  say "15 minutes on 2 cores, with a line every 30 seconds. Later runs start in seconds."
fi
trap 'ticker_stop; printf "\n"; hack/cluster.sh stop' EXIT
run hack/cluster.sh start

heading "Release 1: the Widget CRD and two widgets"
say "A first deploy of a CRD has nothing to compare with: the check passes."
kapp deploy -a "$APP" -f "$EX/crd-v1.yaml" -f "$EX/widgets.yaml" --preflight=CRDUpgradeSafety -y
ok "deployed; size enum on the cluster: $(live_enum)"

heading "Release 2: a safe upgrade"
say "New optional field 'owner', new enum value 'xlarge', replicas maximum 10 -> 20."
run diff -u "$EX/crd-v1.yaml" "$EX/crd-v2-safe.yaml" || true
kapp deploy -a "$APP" -f "$EX/crd-v2-safe.yaml" -f "$EX/widgets.yaml" --preflight=CRDUpgradeSafety -y
ok "applied; size enum on the cluster: $(live_enum)"

heading "Release 3: an unsafe upgrade is blocked"
say "Removes enum value 'small' (used by widget tiny), drops field 'color', makes"
say "'replicas' required and lowers its maximum to 5 (widget big has 8)."
run diff -u "$EX/crd-v2-safe.yaml" "$EX/crd-v3-unsafe.yaml" || true
before="$(live_app)"
grep -q 'kind: Widget' <<<"$before" || fail "could not read the app's live objects"
blocked="$(mktemp)"
if kapp deploy -a "$APP" -f "$EX/crd-v3-unsafe.yaml" -f "$EX/widgets.yaml" --preflight=CRDUpgradeSafety -y 2>&1 | tee "$blocked"; then
  fail "the unsafe upgrade was applied: expected CRDUpgradeSafety to block it"
fi
after="$(live_app)"
[[ "$before" == "$after" ]] || fail "the live CRD or widgets changed although the deploy was blocked"
ok "blocked, as expected. The live CRD and widgets are byte-for-byte unchanged; size enum: $(live_enum)"
say "Each finding says what it does to the stored widgets, data loss first: both"
say "widgets hold a color, which the new CRD would prune on their next write."
grep -q 'data loss: existing field removed (was string): 2 of 2 stored Widgets hold data here, lost on their next write: default/big ("red"), default/tiny ("blue")' "$blocked" ||
  fail "the blocked deploy did not say which widgets lose their color"
rm -f "$blocked"
ok "the stored widgets each finding affects are named, with their values"

heading "The same check without deploying, against the cluster"
say "Without --file, kapp tools crd-upgrade-safety compares the new CRD files with the"
say "live CRDs and validates the existing widgets too (exit status 3: unsafe)."
status=0
kapp tools crd-upgrade-safety --file2 "$EX/crd-v3-unsafe.yaml" || status=$?
[[ $status -eq 3 ]] || fail "expected exit status 3, got $status"
ok "exit status $status"

heading "Release 3 again, in mode warn"
say "A kapp Config among the inputs enables the check in mode warn: the findings"
say "are printed as warnings and the deploy goes on."
run cat "$EX/config-warn.yaml"
kapp deploy -a "$APP" -f "$EX/crd-v3-unsafe.yaml" -f "$EX/widgets.yaml" -f "$EX/config-warn.yaml" -y
ok "applied with warnings; size enum on the cluster: $(live_enum)"

heading "Done"
say "Try it yourself: hack/cluster.sh start; export KUBECONFIG=.cache/cluster/kubeconfig"
say "Docs: docs/config.md (settings) and docs/checks.md (what each check reports)."
say "Stopping the demo cluster."

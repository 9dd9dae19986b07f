#!/usr/bin/env bash
# THE test command: static checks, unit tests, then the end-to-end tests
# against a real control plane (etcd, kube-apiserver, kube-controller-manager)
# built from source, and a real kapp-controller (hack/test-e2e.sh
# --kapp-controller): once against Kubernetes 1.37, once against 1.35.
#
# Usage: [KUBE_VERSIONS="1.37 1.35"] hack/test.sh   (KUBE_VERSIONS: the e2e matrix, in order)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
start=$SECONDS

section() { printf '\n==> %s\n' "$*"; }

section "gofmt"
unformatted="$(gofmt -l cmd pkg test hack 2>/dev/null || true)"
if [[ -n "$unformatted" ]]; then
  echo "not gofmt-ed:" >&2
  echo "$unformatted" >&2
  exit 1
fi

section "go vet"
go vet ./...
(cd hack/cluster && go vet ./...) # clusterutil; the k8s-* modules have no Go code of their own
(cd hack/bench && go vet ./...)
(cd hack/kappctrl && go vet ./...)

section "real CRDs for the engine's tests"
# The proof of no false negatives (TestNoFalseNegativesMutations) and the
# real-CRD tests skip without them; the fetch is cached in .cache/crds.
hack/fetch-crds.sh

# go test -json through hack/testsummary: go test's usual output, then the
# counts and every skipped test with its reason (also collected in
# $skipped, listed at the end).
mkdir -p .cache/bin
go build -o .cache/bin/testsummary ./hack/testsummary
skipped="$(mktemp)"
trap 'rm -f "$skipped"' EXIT
summarize() { .cache/bin/testsummary -skipped "$skipped"; }

section "unit tests"
# test/e2e needs the cluster; it runs below.
mapfile -t pkgs < <(go list ./... | grep -v '/test/e2e')
go test -count=1 -json "${pkgs[@]}" | summarize
# The scale benchmarks' own parsing of kapp's output (hack/bench/scale).
(cd hack/bench && go test -count=1 -json ./scale) | summarize

section "end-to-end tests"
# Against each Kubernetes version of the matrix, with kapp-controller (built
# from source like the cluster) for the TestKappController* tests; the tests
# read KUBE_VERSION to skip what needs a newer one. A cluster of the version
# is started and stopped for each (hack/cluster.sh stop, if one runs).
# Their skips are listed with the version.
read -ra versions <<<"${KUBE_VERSIONS:-1.37 1.35}"
e2e_skipped="$(mktemp)"
trap 'rm -f "$skipped" "$e2e_skipped"' EXIT
for v in "${versions[@]}"; do
  section "end-to-end tests: Kubernetes $v"
  : >"$e2e_skipped"
  KUBE_VERSION="$v" hack/test-e2e.sh --kapp-controller -json | .cache/bin/testsummary -skipped "$e2e_skipped"
  sed "s/^  /  [Kubernetes $v] /" "$e2e_skipped" >>"$skipped"
done

section "skipped tests"
if [[ -s "$skipped" ]]; then
  cat "$skipped"
else
  echo "none"
fi

printf '\n==> all tests passed in %ss\n' "$((SECONDS - start))"

#!/usr/bin/env bash
# THE test command: static checks, unit tests, then the end-to-end tests
# against a real control plane (etcd, kube-apiserver, kube-controller-manager)
# built from source, and a real kapp-controller (hack/test-e2e.sh
# --kapp-controller): once against Kubernetes 1.37, once against 1.35; then
# a release (hack/release.sh: every platform, the images) and its tests
# (hack/test-release.sh).
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

section "build what the end-to-end tests need, in the background"
# The control plane of each Kubernetes version of the matrix, the server-side
# apply clients (Helm 4 and Flux's apply library, hack/ssaclients.sh: about
# 6 minutes on a cold cache), the conversion webhooks (hack/convwebhook.sh:
# about 3 CPU-minutes on a cold cache, little after the former), Helm 3 (hack/helm3.sh: about
# 3 minutes on a cold cache) and kapp-controller: on a cold cache most of a
# CI run (about 15 minutes each on 2 cores for the control plane and
# kapp-controller), so they build from here on, one after the other in the
# order the tests need them, at the lowest CPU priority: on what the checks and unit
# tests below, and the first version's end-to-end tests, leave idle.
# hack/test-e2e.sh waits for a build under way (flock) or, should it have
# failed, builds again and shows why. Last, a release (hack/release.sh): kapp
# for the five platforms (on a cold cache about 5 CPU-minutes for each
# platform but linux/amd64, whose packages the tests' own build compiles),
# the images, the SBOMs; tested at the end ("release" below).
read -ra versions <<<"${KUBE_VERSIONS:-1.37 1.35}"
mkdir -p .cache/test
prebuild_log=.cache/test/background-build.log
release_version=v0.0.0-test
builds=("KUBE_VERSION=${versions[0]} hack/cluster.sh build" "hack/ssaclients.sh build" "hack/convwebhook.sh build" "hack/kapp-controller.sh build" "hack/pkgrepo.sh build" "hack/helm3.sh build")
for v in "${versions[@]:1}"; do
  builds+=("KUBE_VERSION=$v hack/cluster.sh build")
done
builds+=("hack/release.sh $release_version")
# Its own process group (setsid), so that all of it stops with this script.
setsid nice -n 19 bash -c 'for b in "$@"; do echo "==> $b"; env $b || echo "failed: $b"; done' _ "${builds[@]}" \
  >"$prebuild_log" 2>&1 &
prebuild_pid=$!
printf '  %s\n' "${builds[@]}"
echo "(log: $prebuild_log)"
trap 'kill -- -"$prebuild_pid" 2>/dev/null || true' EXIT

section "go vet"
go vet ./...
(cd hack/cluster && go vet ./...) # clusterutil; the k8s-* modules have no Go code of their own
(cd hack/bench && go vet ./...)
(cd hack/kappctrl && go vet ./...)
(cd hack/ssaclients && go vet ./...)
(cd hack/convwebhook && go vet ./...)
(cd hack/release && go vet ./...)
(cd hack/celoracle && go vet ./...)

section "CEL oracle of 1.35"
# celcompat's expectations of 1.35 are apiextensions-apiserver v0.35.0's own
# verdicts: the golden file must be what the oracle prints today.
hack/cel-oracle.sh
git diff --exit-code -- pkg/kapp/internal/celcompat/testdata/v135.golden.json

section "staticcheck"
# The same code as go vet, with staticcheck's default checks; built once from
# the pins in hack/lint/go.sum into .cache/bin.
hack/lint.sh

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
trap 'rm -f "$skipped"; kill -- -"$prebuild_pid" 2>/dev/null || true' EXIT
summarize() { .cache/bin/testsummary -skipped "$skipped"; }

section "unit tests"
# test/e2e needs the cluster; it runs below.
mapfile -t pkgs < <(go list ./... | grep -v '/test/e2e')
go test -count=1 -json "${pkgs[@]}" | summarize
# The scale benchmarks' own parsing of kapp's output (hack/bench/scale).
(cd hack/bench && go test -count=1 -json ./scale) | summarize
# The three builds of the conversion webhook of the e2e tests, each through
# controller-runtime's handler in process (hack/convwebhook).
(cd hack/convwebhook && go test -count=1 -json ./...) | summarize

section "end-to-end tests"
# Against each Kubernetes version of the matrix, with kapp-controller (built
# from source like the cluster) for the TestKappController* tests; the tests
# read KUBE_VERSION to skip what needs a newer one. Each starts and stops a
# cluster of its version (hack/test-e2e.sh fails when a cluster of another
# version runs: hack/cluster.sh stop first). Their skips are listed with the
# version.
e2e_skipped="$(mktemp)"
trap 'rm -f "$skipped" "$e2e_skipped"; kill -- -"$prebuild_pid" 2>/dev/null || true' EXIT
for v in "${versions[@]}"; do
  section "end-to-end tests: Kubernetes $v"
  if kill -0 "$prebuild_pid" 2>/dev/null; then
    echo "the background build is under way: $(grep '^==> ' "$prebuild_log" | tail -n 1 | cut -c5-) (log: $prebuild_log)"
  fi
  : >"$e2e_skipped"
  KUBE_VERSION="$v" hack/test-e2e.sh --kapp-controller -json | .cache/bin/testsummary -skipped "$e2e_skipped"
  sed "s/^  /  [Kubernetes $v] /" "$e2e_skipped" >>"$skipped"
done

section "release"
# The release the background build wrote, tested (hack/test-release.sh);
# should that build have failed, hack/test-release.sh builds it again and
# shows why.
release_start=$SECONDS
if kill -0 "$prebuild_pid" 2>/dev/null; then
  echo "waiting for the background build: $(grep '^==> ' "$prebuild_log" | tail -n 1 | cut -c5-) (log: $prebuild_log)"
fi
wait "$prebuild_pid" || true
echo "waited $((SECONDS - release_start))s for the background build"
release_start=$SECONDS
if grep -qxF "failed: hack/release.sh $release_version" "$prebuild_log"; then
  echo "the background build of the release failed: building it again"
  RELEASE_TEST_VERSION="$release_version" hack/test-release.sh -json | summarize
else
  grep -A100 -xF "==> hack/release.sh $release_version" "$prebuild_log" | grep '^\[release\] .*built in\|done in' || true
  RELEASE_DIR="$ROOT/.cache/release/$release_version" hack/test-release.sh -json | summarize
fi
echo "release tests: $((SECONDS - release_start))s"

section "skipped tests"
if [[ -s "$skipped" ]]; then
  cat "$skipped"
else
  echo "none"
fi

printf '\n==> all tests passed in %ss\n' "$((SECONDS - start))"

#!/usr/bin/env bash
# The steps of the GitHub Action of this repository (action.yml), kept here
# so that the tests run them (pkg/kapp/cmd/tools/crd_upgrade_safety_action_test.go):
#
#   run.sh install   downloads kapp-OS-ARCH of release INPUT_VERSION for the
#                    runner's OS and architecture, and the release's checksums.txt,
#                    from INPUT_RELEASE_URL/VERSION/; checks the binary against
#                    checksums.txt (sha256); outputs its path as `kapp`
#   run.sh check     runs the check once against INPUT_BASE_REF: GitHub
#                    annotations on standard output, the markdown report appended
#                    to the job summary ($GITHUB_STEP_SUMMARY), SARIF written to
#                    INPUT_SARIF_FILE (output `sarif-file`); exits with kapp's
#                    status (0 safe, 3 unsafe, 1 could not run), or 0 for unsafe
#                    under INPUT_MODE=warn
#
# Inputs (the action sets them from its inputs): INPUT_VERSION, INPUT_RELEASE_URL;
# KAPP (the installed binary), INPUT_FILES (paths of the new CRDs, one per line
# or separated by spaces), INPUT_BASE_REF (one revision per line: each is a
# baseline), INPUT_BASELINE (merge-base or tip), INPUT_MODE (error or warn),
# INPUT_SARIF_FILE, INPUT_ARGS (more arguments, separated by spaces).
# GitHub's: RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY.
set -euo pipefail

die() {
  echo "::error title=CRD upgrade safety::$*"
  exit 1
}

output() {
  if [[ -n "${GITHUB_OUTPUT:-}" ]]; then echo "$1=$2" >>"$GITHUB_OUTPUT"; fi
}

install() {
  local version="${INPUT_VERSION:-}" url="${INPUT_RELEASE_URL:-https://github.com/crdsafety/kapp/releases/download}"
  [[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
    die "version: expected a release tag (vMAJOR.MINOR.PATCH), got '$version': set the action's version input, or use the action at a release tag"
  local os arch
  case "${RUNNER_OS:-$(uname -s)}" in
  Linux) os=linux ;;
  macOS | Darwin) os=darwin ;;
  Windows | MINGW* | MSYS*) os=windows ;;
  *) die "no release binary for the runner's OS ${RUNNER_OS:-$(uname -s)} (linux, darwin and windows are released)" ;;
  esac
  case "${RUNNER_ARCH:-$(uname -m)}" in
  X64 | x86_64 | amd64) arch=amd64 ;;
  ARM64 | aarch64 | arm64) arch=arm64 ;;
  *) die "no release binary for the runner's architecture ${RUNNER_ARCH:-$(uname -m)} (amd64 and arm64 are released)" ;;
  esac
  local bin="kapp-$os-$arch"
  [[ "$os" == windows ]] && bin+=.exe

  local dir="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/crd-upgrade-safety-$version"
  mkdir -p "$dir"
  for f in "$bin" checksums.txt; do
    curl -fsSL --retry 3 -o "$dir/$f" "$url/$version/$f" || die "downloading $url/$version/$f failed"
  done
  (
    cd "$dir"
    if ! grep -E "^[0-9a-f]{64}  $bin\$" checksums.txt >"$bin.sha256"; then
      echo "the release's checksums.txt lists no $bin"
      exit 1
    fi
    if command -v sha256sum >/dev/null; then
      sha256sum --check --strict "$bin.sha256"
    else
      shasum -a 256 --check "$bin.sha256"
    fi
  ) || die "$bin of $version does not match the release's checksums.txt: not run"
  chmod +x "$dir/$bin"
  "$dir/$bin" version
  output kapp "$dir/$bin"
}

check() {
  local kapp="${KAPP:-kapp}" refs=() files=() status=0
  # One revision per line (or word): each is a baseline.
  read -r -d '' -a refs <<<"${INPUT_BASE_REF:-}" || true
  read -r -d '' -a files <<<"${INPUT_FILES:-config/crds/}" || true
  ((${#refs[@]})) || die "base-ref: no revision to compare with (on pull_request events it defaults to the pull request's base)"
  ((${#files[@]})) || die "files: no CRD files or folders"

  local args=(tools crd-upgrade-safety)
  for ref in "${refs[@]}"; do
    if ! git rev-parse --verify --quiet "$ref^{commit}" >/dev/null; then
      if git rev-parse --verify --quiet "origin/$ref^{commit}" >/dev/null; then
        ref="origin/$ref" # a branch name (github.base_ref)
      else
        echo "Fetching $ref, which this clone lacks"
        git fetch --quiet --no-tags origin "$ref" || true
      fi
    fi
    args+=(--git-ref "$ref")
  done
  case "${INPUT_BASELINE:-merge-base}" in
  merge-base)
    if [[ "$(git rev-parse --is-shallow-repository)" == true ]]; then
      # The merge base needs the history (actions/checkout: fetch-depth: 0).
      echo "Fetching the history of this shallow clone, for the merge base"
      git fetch --quiet --no-tags --unshallow origin || true
    fi
    ;;
  tip) args+=(--git-ref-tip) ;;
  *) die "baseline: expected merge-base or tip, got '$INPUT_BASELINE'" ;;
  esac
  case "${INPUT_MODE:-error}" in
  error | warn) ;;
  *) die "mode: expected error or warn, got '$INPUT_MODE'" ;;
  esac
  for f in "${files[@]}"; do args+=(--file2 "$f"); done

  local sarif="${INPUT_SARIF_FILE:-crd-upgrade-safety.sarif}" summary
  summary="$(mktemp)"
  rm -f "$sarif"
  local extra=()
  read -r -a extra <<<"${INPUT_ARGS:-}" || true
  "$kapp" "${args[@]}" --output github --output-file "markdown=$summary" --output-file "sarif=$sarif" ${extra[@]+"${extra[@]}"} || status=$?
  if [[ -s "$summary" && -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
    cat "$summary" >>"$GITHUB_STEP_SUMMARY"
  fi
  rm -f "$summary"
  [[ -f "$sarif" ]] && output sarif-file "$sarif"
  if [[ "$status" == 3 && "${INPUT_MODE:-error}" == warn ]]; then
    echo "::warning title=CRD upgrade safety::unsafe CRD changes (mode warn: the step passes)"
    status=0
  fi
  return "$status"
}

case "${1:-}" in
install) install ;;
check) check ;;
*)
  echo "usage: $0 install|check" >&2
  exit 2
  ;;
esac

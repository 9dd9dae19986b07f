#!/usr/bin/env bash
# Builds a release into .cache/release/VERSION/ (git-ignored), reproducibly:
# the same commit, Go version and VERSION give the same bytes.
#
#   kapp-OS-ARCH[.exe]              kapp for linux and darwin on amd64 and arm64,
#                                   windows on amd64 (upstream kapp's platforms):
#                                   static (CGO_ENABLED=0), -trimpath, no VCS stamp,
#                                   `kapp version` prints VERSION (set by -ldflags)
#   kapp-OS-ARCH[.exe].sbom.json    the Go modules in each binary (CycloneDX JSON,
#                                   cyclonedx-gomod bin, from the binary's build info)
#   image/                          the webhook's image: an OCI image layout of one
#                                   image index (linux/amd64, linux/arm64), tag VERSION
#   kapp-controller-layer-linux-ARCH.tar.gz
#                                   the layer that puts this kapp at /kapp, where
#                                   kapp-controller's image keeps its kapp (crane
#                                   append, docs/kapp-controller.md)
#   package-bundle/, package-repository/
#                                   the webhook as a Carvel package (carvel-package/):
#                                   the package bundle (its templates, the image
#                                   pinned by digest in .imgpkg/images.yml) and the
#                                   package repository bundle (packages/: PackageMetadata,
#                                   Package), imgpkg bundles as OCI image layouts, tag
#                                   VERSION, for $IMAGE_REPO-webhook-package and
#                                   $IMAGE_REPO-package-repository (crane push)
#   crd-upgrade-safety-webhook-X.Y.Z.tgz
#                                   the webhook's Helm chart (charts/crd-upgrade-safety-webhook),
#                                   packaged as `helm package` does: version and appVersion
#                                   X.Y.Z, image $IMAGE_REPO:VERSION
#   crd-upgrade-safety-webhook.yaml the webhook's install (examples/webhook), its
#                                   image ghcr.io/crdsafety/kapp:VERSION ($IMAGE_REPO)
#   crd-upgrade-safety-webhook-cert-manager.yaml, crd-upgrade-safety-webhook-waiver-policy.yaml,
#   crd-upgrade-safety-webhook-broad-rbac.yaml
#                                   examples/webhook-cert-manager, examples/webhook-waiver-policy,
#                                   examples/webhook-broad-rbac
#   checksums.txt                   sha256sum of all of the above (image/ through its
#                                   index.json, which names every blob by digest;
#                                   the bundles likewise)
#
# The tools (cyclonedx-gomod, and release-image: the images, written with
# go-containerregistry without a container daemon; and crane, to push the
# image: .cache/bin/crane push .cache/release/VERSION/image REPO:VERSION) come
# from the module hack/release, pinned by its go.sum, built into .cache/bin.
#
# Usage: hack/release.sh VERSION             VERSION: vMAJOR.MINOR.PATCH[-PRERELEASE]
#        hack/release.sh --rebuild VERSION OS/ARCH DIR
#                                            build one binary again, as the release
#                                            did, into DIR (the reproducibility test)
# Environment:
#   RELEASE_PLATFORMS   the binaries' platforms (default: all five; the image and
#                       the layers need linux/amd64 and linux/arm64)
#   IMAGE_REPO          the webhook image's repository (default ghcr.io/crdsafety/kapp)
#   SOURCE_DATE_EPOCH   the time in the images and layers (default: HEAD's commit time)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TOOLS_DIR="$ROOT/hack/release"
BIN_DIR="$ROOT/.cache/bin"
ALL_PLATFORMS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"
IMAGE_PLATFORMS="linux/amd64 linux/arm64"
IMAGE_REPO="${IMAGE_REPO:-ghcr.io/crdsafety/kapp}"
# The placeholder of examples/webhook/deployment.yaml that a release sets.
IMAGE_PLACEHOLDER="ghcr.io/crdsafety/kapp:VERSION"

log() { printf '[release] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# shellcheck source=hack/lib/build.sh
source "$ROOT/hack/lib/build.sh" # go_build_progress, elapsed

check_version() {
  # A semantic version that is also an image tag (no "+build").
  [[ "$1" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
    die "version $1: want vMAJOR.MINOR.PATCH[-PRERELEASE] (e.g. v1.0.0)"
}

binary_name() { # binary_name OS/ARCH -> kapp-OS-ARCH[.exe]
  local name="kapp-${1%/*}-${1#*/}"
  [[ "${1%/*}" == windows ]] && name+=".exe"
  echo "$name"
}

# build_kapp VERSION OS/ARCH OUT: the build of record of a release binary.
# Everything that goes into the bytes is set here, not taken from the
# environment: no cgo, paths trimmed, no VCS stamp or build ID, the
# architecture levels at Go's defaults, the module graph of go.sum.
build_kapp() {
  local version="$1" platform="$2" out="$3"
  (
    export CGO_ENABLED=0 GOOS="${platform%/*}" GOARCH="${platform#*/}" GOAMD64=v1 GOARM64=v8.0 GOTOOLCHAIN=local
    unset GOFLAGS GOEXPERIMENT
    go_build_progress "kapp for $platform" "$out.log" \
      -mod=readonly -trimpath -buildvcs=false \
      -ldflags "-buildid= -X github.com/crdsafety/kapp/pkg/kapp/cmd.Version=$version" \
      -o "$out" ./cmd/kapp
  )
  rm -f "$out.log"
}

# The tools are rebuilt when this changes: the pins, the code of
# release-image, the Go toolchain.
tools_stamp() {
  {
    cat "$TOOLS_DIR/go.mod" "$TOOLS_DIR/go.sum" "$TOOLS_DIR"/*.go
    go env GOVERSION GOOS GOARCH
  } | sha256sum | cut -d' ' -f1
}

build_tools() {
  mkdir -p "$BIN_DIR"
  exec 8>"$BIN_DIR/.build-release-tools.lock"
  flock 8
  local want have
  want="$(tools_stamp)"
  have="$(cat "$BIN_DIR/.stamp-release-tools" 2>/dev/null || true)"
  if [[ "$want" != "$have" || ! -x "$BIN_DIR/cyclonedx-gomod" || ! -x "$BIN_DIR/release-image" || ! -x "$BIN_DIR/crane" ]]; then
    local start=$SECONDS tmp
    log "building cyclonedx-gomod, crane and release-image (module hack/release) through the Go module proxy"
    tmp="$(mktemp -d "$BIN_DIR/.build-release-tools.XXXXXX")"
    (
      cd "$TOOLS_DIR" &&
        go_build_progress "release tools" "$tmp/build.log" -mod=readonly -trimpath -o "$tmp/" \
          github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod github.com/google/go-containerregistry/cmd/crane . &&
        mv "$tmp/release" "$tmp/release-image"
    ) || {
      rm -rf "$tmp"
      die "building the release tools failed"
    }
    mv -f "$tmp/cyclonedx-gomod" "$tmp/crane" "$tmp/release-image" "$BIN_DIR/"
    rm -rf "$tmp"
    echo "$want" >"$BIN_DIR/.stamp-release-tools"
    log "built in $(elapsed $((SECONDS - start)))"
  fi
  flock -u 8
}

contains() { # contains WORD LIST...
  local w="$1" x
  shift
  for x in "$@"; do [[ "$x" == "$w" ]] && return 0; done
  return 1
}

# manifests SRC_DIR OUT: the YAML files of SRC_DIR, in name order, as one
# file, the image tag set.
manifests() {
  local f first=1
  for f in "$1"/*.yaml; do
    ((first)) || echo "---"
    first=0
    echo "# $(basename "$1")/$(basename "$f")"
    sed "s|$IMAGE_PLACEHOLDER|$IMAGE_REPO:$VERSION|g" "$f"
  done >"$2"
}

if [[ "${1:-}" == "--rebuild" ]]; then
  [[ $# -eq 4 ]] || die "usage: hack/release.sh --rebuild VERSION OS/ARCH DIR"
  VERSION="$2"
  check_version "$VERSION"
  mkdir -p "$4"
  out="$4/$(binary_name "$3")"
  build_kapp "$VERSION" "$3" "$out"
  echo "$out"
  exit 0
fi

[[ $# -eq 1 ]] || die "usage: hack/release.sh VERSION (e.g. v1.0.0)"
VERSION="$1"
check_version "$VERSION"
read -ra platforms <<<"${RELEASE_PLATFORMS:-$ALL_PLATFORMS}"
for p in "${platforms[@]}"; do
  contains "$p" $ALL_PLATFORMS || die "platform $p: want some of: $ALL_PLATFORMS"
done
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

OUT="$ROOT/.cache/release/$VERSION"
start=$SECONDS
log "release $VERSION into $OUT"
build_tools
rm -rf "$OUT"
mkdir -p "$OUT"

for p in "${platforms[@]}"; do
  name="$(binary_name "$p")"
  t=$SECONDS
  build_kapp "$VERSION" "$p" "$OUT/$name"
  log "$name: built in $(elapsed $((SECONDS - t)))"
  # The modules in the binary, from its build info (go version -m); no
  # serial number or timestamp, so that the SBOM is reproducible too.
  # cyclonedx-gomod takes the platform of the package URLs from `go env`:
  # the binary's.
  GOOS="${p%/*}" GOARCH="${p#*/}" "$BIN_DIR/cyclonedx-gomod" bin -json -std -noserial -notimestamp -version "$VERSION" \
    -output "$OUT/$name.sbom.json" "$OUT/$name" 2>"$OUT/.sbom.log" || {
    cat "$OUT/.sbom.log" >&2
    die "SBOM of $name failed"
  }
  rm -f "$OUT/.sbom.log"
done

image_args=()
for p in $IMAGE_PLATFORMS; do
  if contains "$p" "${platforms[@]}"; then
    image_args+=("$p=$OUT/$(binary_name "$p")")
  fi
done
if [[ ${#image_args[@]} -eq 0 ]]; then
  log "no linux binary: no image, no kapp-controller layer"
else
  "$BIN_DIR/release-image" webhook -version "$VERSION" -ca-certs /etc/ssl/certs/ca-certificates.crt \
    -out "$OUT/image" "${image_args[@]}" >&2
  for a in "${image_args[@]}"; do
    p="${a%%=*}"
    "$BIN_DIR/release-image" kapp-controller-layer \
      -out "$OUT/kapp-controller-layer-${p%/*}-${p#*/}.tar.gz" "${a#*=}" >&2
  done
fi

if [[ -d "$OUT/image" ]]; then
  # The Carvel package pins the image just built by its digest.
  "$BIN_DIR/release-image" package-repository -version "$VERSION" -package-dir "$ROOT/carvel-package" \
    -image-repo "$IMAGE_REPO" -image-layout "$OUT/image" -bundle-repo "$IMAGE_REPO-webhook-package" \
    -repository-repo "$IMAGE_REPO-package-repository" -out "$OUT" >&2
fi

"$BIN_DIR/release-image" chart -version "$VERSION" -image "$IMAGE_REPO:$VERSION" -out "$OUT" \
  "$ROOT/charts/crd-upgrade-safety-webhook" >&2

manifests examples/webhook "$OUT/crd-upgrade-safety-webhook.yaml"
manifests examples/webhook-cert-manager "$OUT/crd-upgrade-safety-webhook-cert-manager.yaml"
manifests examples/webhook-waiver-policy "$OUT/crd-upgrade-safety-webhook-waiver-policy.yaml"
manifests examples/webhook-broad-rbac "$OUT/crd-upgrade-safety-webhook-broad-rbac.yaml"
grep -q "$IMAGE_REPO:$VERSION" "$OUT/crd-upgrade-safety-webhook.yaml" ||
  die "examples/webhook names no image $IMAGE_PLACEHOLDER to set"

(
  cd "$OUT"
  files=()
  for f in *; do [[ -f "$f" ]] && files+=("$f"); done
  for d in image package-bundle package-repository; do
    if [[ -d "$d" ]]; then files+=("$d/index.json"); fi
  done
  sha256sum "${files[@]}" >checksums.txt
)

log "done in $(elapsed $((SECONDS - start))):"
(cd "$OUT" && find . -maxdepth 1 -type f -printf '%s\t%f\n' | sort -k2 && for d in image package-bundle package-repository; do
  if [[ -d "$d" ]]; then du -sb "$d" | sed 's|\t| |'; fi
done) |
  while read -r size name; do printf '  %12s  %s\n' "$size" "$name"; done >&2
echo "$OUT"

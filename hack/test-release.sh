#!/usr/bin/env bash
# The tests of a release: builds one with hack/release.sh (every platform,
# the webhook's image, the kapp-controller layers, SBOMs, checksums), then
# runs the tests of module hack/release on it: the binaries' platforms and
# build settings, the linux/amd64 binary's `kapp version`, a rebuild of it
# from a copy of the tree that must give the same bytes, the checksums and
# SBOMs, the image read back with go-containerregistry (config, platforms,
# the binary taken out of it and run), the webhook install's image tag, the
# Carvel package's bundles (the package bundle pinning the image index by
# digest, the repository bundle's Package and PackageMetadata, pushed with
# crane to a registry on loopback), the Helm chart archive, and
# docs/kapp-controller.md's crane commands on a stand-in kapp-controller
# image in a registry on loopback. hack/test.sh runs it.
#
# Usage: hack/test-release.sh [GO TEST FLAGS...]   e.g. -json, -run TestReleaseSBOMs
# Environment:
#   RELEASE_TEST_VERSION     the version to build (default v0.0.0-test)
#   RELEASE_DIR              test this release instead of building one
#   RELEASE_REBUILD_GOCACHE  the rebuild's Go build cache: an empty directory
#                            compiles everything again (about 5 CPU-minutes);
#                            default: the usual cache (the compiled packages
#                            are reused, the link and everything path- and
#                            environment-dependent is done again)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ -z "${RELEASE_DIR:-}" ]]; then
  version="${RELEASE_TEST_VERSION:-v0.0.0-test}"
  hack/release.sh "$version" >/dev/null
  RELEASE_DIR="$ROOT/.cache/release/$version"
fi
RELEASE_DIR="$(cd "$RELEASE_DIR" && pwd)" # the tests run in hack/release
export RELEASE_DIR

cd hack/release
go test -count=1 -mod=readonly "$@" ./...

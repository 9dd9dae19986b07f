#!/usr/bin/env bash
# Builds bin/kapp: upstream kapp with the CRDUpgradeSafety preflight check.
# Our version comes from `git describe --always --dirty` (fallback: develop);
# override with VERSION=v1.2.3. The kapp version it is built on comes from
# the module build info (carvel.dev/kapp in go.mod).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

version=${VERSION:-$(git describe --always --dirty 2>/dev/null || true)}
version=${version:-develop}

mkdir -p bin
CGO_ENABLED=${CGO_ENABLED:-0} go build -trimpath \
  -ldflags "-X github.com/crdsafety/kapp/pkg/kapp/cmd.Version=${version}" \
  -o bin/kapp ./cmd/kapp

echo "$root/bin/kapp"

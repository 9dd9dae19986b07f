#!/usr/bin/env bash
# Rewrites pkg/kapp/internal/celcompat/testdata/v135.golden.json: the errors
# that k8s.io/apiextensions-apiserver v0.35.0 (Kubernetes 1.35's CEL
# semantics) gives for each case of testdata/cases.json there, through
# hack/celoracle (a module of its own, built from the Go module proxy).
# celcompat's TestBefore137IsTheOracle compares its Before137 semantics
# with that file; run this after editing the cases, and review the diff.
#
# Usage: hack/cel-oracle.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=$ROOT/pkg/kapp/internal/celcompat/testdata
cd "$ROOT/hack/celoracle"
go run -mod=readonly . <"$DATA/cases.json" >"$DATA/v135.golden.json.tmp"
mv "$DATA/v135.golden.json.tmp" "$DATA/v135.golden.json"
echo "wrote $DATA/v135.golden.json" >&2

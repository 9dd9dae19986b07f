#!/usr/bin/env bash
# fetch-crds.sh copies real CRDs from the Go modules that ship them into the
# git-ignored .cache/crds/ folder, for the engine's benchmarks and real-CRD
# tests (pkg/kapp/crdupgradesafety: BenchmarkCompare,
# TestRealCRDsSelfCompare, TestNoFalseNegativesMutations). hack/test.sh runs
# it before the unit tests. Modules come through the Go module proxy with
# `go mod download`, run outside of this repository's module so that its
# go.mod is never touched.
#
# Layout:
#   .cache/crds/prometheus-operator/<file>.yaml
#   .cache/crds/cert-manager/<file>.yaml
#   .cache/crds/gateway-api/standard/<file>.yaml
#   .cache/crds/gateway-api/experimental/<file>.yaml
#   .cache/crds/cluster-api/old/<file>.yaml     (an earlier release: real upgrade pairs
#   .cache/crds/cluster-api/new/<file>.yaml      with the same file names under new/)
#
# Usage: hack/fetch-crds.sh            (a no-op when .cache/crds holds these
#                                      versions; FORCE=1 replaces the folder)
# Override versions with PROMETHEUS_OPERATOR_VERSION, CERT_MANAGER_VERSION,
# GATEWAY_API_VERSION, CLUSTER_API_OLD_VERSION, CLUSTER_API_VERSION.
set -euo pipefail

# The newest versions the module proxy serves that build with this repo's Go
# (gateway-api v1.7.0 needs go >= 1.27; prometheus-operator v0.86.0 is not served).
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"
CERT_MANAGER_VERSION="${CERT_MANAGER_VERSION:-v1.21.2}"
GATEWAY_API_VERSION="${GATEWAY_API_VERSION:-v1.6.3}"
# Two releases of cluster-api: its CRDs are large (up to ~360 KB) and an
# upgrade from one to the other is a real pair for the benchmarks.
CLUSTER_API_OLD_VERSION="${CLUSTER_API_OLD_VERSION:-v1.13.6}"
CLUSTER_API_VERSION="${CLUSTER_API_VERSION:-v1.14.2}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${root}/.cache/crds"

versions="github.com/prometheus-operator/prometheus-operator ${PROMETHEUS_OPERATOR_VERSION}
github.com/cert-manager/cert-manager ${CERT_MANAGER_VERSION}
sigs.k8s.io/gateway-api ${GATEWAY_API_VERSION}
sigs.k8s.io/cluster-api ${CLUSTER_API_OLD_VERSION} (cluster-api/old) ${CLUSTER_API_VERSION} (cluster-api/new)"

# Already fetched at these versions (hack/test.sh runs this before every
# unit test run): nothing to do. FORCE=1 fetches again.
if [ "${FORCE:-}" != 1 ] && [ -f "${dest}/VERSIONS" ] && [ "$(cat "${dest}/VERSIONS")" = "${versions}" ]; then
	echo "fetch-crds: up to date (${dest#"${root}"/})"
	exit 0
fi

# module_dir MODULE@VERSION prints the module's extracted directory in the
# module cache, downloading it first when needed.
module_dir() {
	local json dir
	# On failure go prints the error inside the JSON (and exits non-zero):
	# keep the output to show it below.
	json="$(cd "${tmp}" && GOFLAGS=-mod=mod go mod download -json "$1")" || true
	dir="$(printf '%s\n' "${json}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
	if [ -z "${dir}" ] || [ ! -d "${dir}" ]; then
		echo "fetch-crds: go mod download $1 failed:" >&2
		printf '%s\n' "${json}" >&2
		exit 1
	fi
	printf '%s\n' "${dir}"
}

# copy_crds SRC_DIR DEST_DIR copies the YAML files of SRC_DIR that hold a
# CustomResourceDefinition (not kustomizations or admission policies).
copy_crds() {
	local src="$1" out="$2" f n=0
	mkdir -p "${out}"
	for f in "${src}"/*.yaml; do
		[ -e "${f}" ] || continue
		grep -q '^kind: CustomResourceDefinition' "${f}" || continue
		cp "${f}" "${out}/"
		chmod u+w "${out}/$(basename "${f}")" # the module cache is read-only
		n=$((n + 1))
	done
	if [ "${n}" -eq 0 ]; then
		echo "fetch-crds: no CRDs found in ${src}" >&2
		exit 1
	fi
	echo "fetch-crds: ${n} CRDs from ${src#"$(go env GOMODCACHE)"/}"
}

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# Stage everything first: a failed download leaves .cache/crds as it was.
stage="${tmp}/crds"
mkdir -p "${stage}"

dir="$(module_dir "github.com/prometheus-operator/prometheus-operator@${PROMETHEUS_OPERATOR_VERSION}")"
copy_crds "${dir}/example/prometheus-operator-crd" "${stage}/prometheus-operator"

dir="$(module_dir "github.com/cert-manager/cert-manager@${CERT_MANAGER_VERSION}")"
copy_crds "${dir}/deploy/crds" "${stage}/cert-manager"

dir="$(module_dir "sigs.k8s.io/gateway-api@${GATEWAY_API_VERSION}")"
copy_crds "${dir}/config/crd/standard" "${stage}/gateway-api/standard"
copy_crds "${dir}/config/crd/experimental" "${stage}/gateway-api/experimental"

# cluster-api: the core CRDs moved from config/crd/bases to
# core/config/crd/bases in v1.14; the kubeadm bootstrap and control plane
# providers ship theirs in the same module.
copy_cluster_api() {
	local dir sub
	dir="$(module_dir "sigs.k8s.io/cluster-api@$1")"
	for sub in config/crd/bases core/config/crd/bases bootstrap/kubeadm/config/crd/bases controlplane/kubeadm/config/crd/bases; do
		if [ -d "${dir}/${sub}" ]; then
			copy_crds "${dir}/${sub}" "${stage}/cluster-api/$2"
		fi
	done
}
copy_cluster_api "${CLUSTER_API_OLD_VERSION}" old
copy_cluster_api "${CLUSTER_API_VERSION}" new

printf '%s\n' "${versions}" >"${stage}/VERSIONS"
rm -rf "${dest}"
mkdir -p "$(dirname "${dest}")"
mv "${stage}" "${dest}"
echo "fetch-crds: done (${dest#"${root}"/})"

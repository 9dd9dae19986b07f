#!/usr/bin/env bash
# bench-offline.sh measures `kapp tools crd-upgrade-safety --file v1/ --file2
# v2/` as a new user runs it over a whole operator set: the 300 real CRDs
# of hack/bench-deploy.sh (the real CRDs of .cache/crds, cycled, each in its
# own group; about 53 MB a side), every CRD with a safe change. It prints
# the median wall time, CPU time and peak RSS of bin/kapp and of every
# other kapp binary given (to compare before and after a change); its last
# line is `offline: ... (target < 8s): met|NOT MET` for bin/kapp.
#
# Usage: hack/bench-offline.sh [OTHER_KAPP ...]
# Environment: CRDS=300 RUNS=3
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=lib/bench.sh
source hack/lib/bench.sh
bench_prepare bench-offline .cache/crds/prometheus-operator/monitoring.coreos.com_prometheuses.yaml .cache/crds/cluster-api/new

app=".cache/bench/offline/app-${CRDS:-300}"
if [[ ! -d "$app/v2" ]]; then
  "$scale" app -crds .cache/crds -out "$app" -n "${CRDS:-300}" -crs 0 >&2
fi
echo "bench-offline: load $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min), $(nproc) cores" >&2
"$scale" offline -runs "${RUNS:-3}" -target 8s -old "$app/v1" -new "$app/v2" bin/kapp "$@"

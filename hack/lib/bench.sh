# Sourced by hack/bench-deploy.sh, hack/bench-live.sh and hack/bench-memory.sh
# (from the repository root): what every scale benchmark needs first.

# bench_prepare NAME FILE...: the real CRDs (hack/fetch-crds.sh, when any
# FILE or folder is missing), bin/kapp and the scale tool built; sets
# $scale to the tool's path. NAME prefixes the messages.
bench_prepare() {
  local name="$1" f
  shift
  for f in "$@"; do
    if [[ ! -e "$f" ]]; then
      echo "$name: real CRDs missing in .cache/crds, running hack/fetch-crds.sh" >&2
      hack/fetch-crds.sh >&2
      break
    fi
  done
  echo "$name: building bin/kapp and the scale tool" >&2
  hack/build.sh >/dev/null
  scale="$PWD/.cache/bench/scale"
  (cd hack/bench && go build -o "$scale" ./scale)
}

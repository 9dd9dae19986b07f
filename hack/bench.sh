#!/usr/bin/env bash
# bench.sh benchmarks our CRDUpgradeSafety engine side by side with upstream
# kapp v0.66.0's validator (the separate module hack/bench, so the product
# never imports upstream's validator), then prints a summary table:
#
#   - per real CRD pair: median ns/op and B/op of upstream and ours, the
#     speed-up and bytes factors, and whether the performance targets
#     ("Performance budget": >= 20x faster, >= 10x fewer bytes allocated)
#     are met;
#   - per large real pair, the whole `kapp tools crd-upgrade-safety -f OLD
#     --file2 NEW` (reading, decoding, comparing, the apiserver's validation
#     of both CRDs) beside upstream's validator run the same simplest way
#     (read and parse both files, compare once): ours/upstream, target at
#     most 0.5x (issue 10); beside it "compare only", ours without the
#     apiserver's validation of both CRDs (apiserverRejects), the work
#     upstream does, so a miss caused by that validation alone (the
#     apiserver's CEL compilation of a CRD full of rules) shows as such;
#   - the linearity series (synthetic nested schemas of N properties): cost
#     per property, which must stay flat as N grows;
#   - a sanity section: what each engine reports on the pairs, notably on the
#     mutated prometheuses pair (a field removed, a bound tightened).
#
# Real CRDs come from .cache/crds (hack/fetch-crds.sh is run when they are
# missing). Raw results are kept in .cache/bench/latest.txt (the previous
# run's in .cache/bench/previous.txt), for benchstat.
#
# Usage:
#   hack/bench.sh                     run everything (takes a few minutes)
#   hack/bench.sh --summarize FILE    only summarize a saved `go test -bench` output
# Environment:
#   COUNT=5         runs per benchmark (-count)
#   BENCHTIME=      go test -benchtime (default: go's 1s)
#   BENCH=.         -bench regexp, e.g. 'RealPairs/pair=prometheuses' or '//engine=ours'
#   BENCHSTAT=1     also print benchstat's table (go run golang.org/x/perf/cmd/benchstat@latest)
#                   when it can be installed; 0 to skip
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench_dir="${root}/hack/bench"
out_dir="${root}/.cache/bench"

# The performance targets (README, "Performance").
min_speedup=20
min_bytes_factor=10
# Issue 10: the whole command at most this fraction of upstream's run.
max_command_ratio=0.5
# The linearity series counts as flat when ns/prop varies by at most this
# factor across N.
max_flat_spread=1.5

# summarize FILE prints the summary tables of a `go test -bench -benchmem`
# output.
summarize() {
	awk -v min_speedup="${min_speedup}" -v min_bytes="${min_bytes_factor}" \
		-v max_spread="${max_flat_spread}" -v max_cmd="${max_command_ratio}" '
	# median of the space-separated numbers in s (mean of the middle two
	# for an even count, as benchstat).
	function median(s,    a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 2; i <= n; i++) {
			t = a[i] + 0
			for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]
			a[j + 1] = t
		}
		if (n == 0) return ""
		if (n % 2) return a[(n + 1) / 2] + 0
		return (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function count(s,    a) { return split(s, a, " ") }
	# commas renders a number rounded to an integer with thousands separators.
	function commas(x,    s, r) {
		if (x == "") return "-"
		s = sprintf("%.0f", x)
		r = ""
		while (length(s) > 3) {
			r = "," substr(s, length(s) - 2) r
			s = substr(s, 1, length(s) - 3)
		}
		return s r
	}
	function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "" : a / b }
	function fmtx(x) { return x == "" ? "-" : sprintf("%.1fx", x) }
	function fmtf(x) { return x == "" ? "-" : sprintf("%.1f", x) }

	/^Benchmark/ {
		name = $1
		sub(/-[0-9]+$/, "", name) # GOMAXPROCS suffix
		n = split(name, part, "/")
		group = ""; engine = ""; size = ""
		for (i = 2; i <= n; i++) {
			if (part[i] ~ /^pair=/) group = substr(part[i], 6)
			else if (part[i] ~ /^N=/) size = substr(part[i], 3)
			else if (part[i] ~ /^engine=/) engine = substr(part[i], 8)
		}
		if (engine == "") next
		key = ""
		if (part[1] == "BenchmarkRealPairs" && group != "") {
			key = "pair " group
			if (!(group in seen_pair)) { seen_pair[group] = 1; pairs[++npairs] = group }
		} else if (part[1] == "BenchmarkCommand" && group != "") {
			key = "cmd " group
			if (!(group in seen_cmd)) { seen_cmd[group] = 1; cmds[++ncmds] = group }
		} else if (part[1] == "BenchmarkLinearity" && size != "") {
			key = "size " size
			if (!(size in seen_size)) { seen_size[size] = 1; sizes[++nsizes] = size }
		}
		if (key == "") next
		for (i = 3; i < NF; i += 2) {
			unit = $(i + 1)
			if (unit == "ns/op" || unit == "B/op" || unit == "allocs/op")
				vals[key, engine, unit] = vals[key, engine, unit] " " $i
		}
		next
	}

	END {
		if (npairs == 0 && nsizes == 0 && ncmds == 0) {
			print "bench: no benchmark results to summarize" > "/dev/stderr"
			exit 1
		}
		runs = 0
		if (npairs > 0) {
			printf "\nReal CRD pairs (medians; targets: >= %dx faster, >= %dx fewer bytes than upstream)\n\n", min_speedup, min_bytes
			printf "%-22s %5s %15s %13s %9s %15s %13s %9s  %s\n", "pair", "runs", "upstream ns/op", "ours ns/op", "speed-up", "upstream B/op", "ours B/op", "bytes", "targets"
			met = 0; missed = ""; incomplete = ""
			for (p = 1; p <= npairs; p++) {
				k = "pair " pairs[p]
				un = median(vals[k, "upstream", "ns/op"]); on = median(vals[k, "ours", "ns/op"])
				ub = median(vals[k, "upstream", "B/op"]); ob = median(vals[k, "ours", "B/op"])
				r = count(vals[k, "ours", "ns/op"]); if (count(vals[k, "upstream", "ns/op"]) < r) r = count(vals[k, "upstream", "ns/op"])
				sp = ratio(un, on); bf = ratio(ub, ob)
				if (sp == "" || bf == "") { verdict = "n/a"; incomplete = incomplete " " pairs[p] }
				else if (sp >= min_speedup && bf >= min_bytes) { verdict = "met"; met++ }
				else {
					verdict = "MISSED"
					if (sp < min_speedup) verdict = verdict " (time)"
					if (bf < min_bytes) verdict = verdict " (bytes)"
					missed = missed " " pairs[p]
				}
				printf "%-22s %5d %15s %13s %9s %15s %13s %9s  %s\n", pairs[p], r, commas(un), commas(on), fmtx(sp), commas(ub), commas(ob), fmtx(bf), verdict
			}
			print ""
			if (missed != "") printf "Targets: NOT MET on%s (met on %d of %d pairs)\n", missed, met, npairs
			else if (incomplete != "") printf "Targets: met on %d pairs; no side-by-side result for%s\n", met, incomplete
			else printf "Targets: MET on all %d real pairs (>= %dx faster and >= %dx fewer bytes allocated)\n", npairs, min_speedup, min_bytes
		}
		if (ncmds > 0) {
			printf "\nWhole command vs upstream read the same way: both files parsed, compared once (medians; target: ours <= %.1fx upstream)\n", max_cmd
			printf "(compare only: ours without the apiserver'"'"'s validation of both CRDs, the work upstream does;\n"
			printf " validation floor: the apiserver'"'"'s own validation of the update alone, on decoded CRDs, one serial call\n"
			printf " of its library that the whole command cannot skip while apiserverRejects is enabled: where it exceeds the\n"
			printf " target, no change to our code can meet the target with that check on)\n\n"
			printf "%-36s %5s %12s %9s %9s %13s %9s %11s %9s  %s\n", "pair", "runs", "upstream ms", "ours ms", "ours/up", "compare only", "ratio", "val. floor", "ratio", "target"
			cmet = 0; cmissed = ""; cvalid = ""; cfloor = ""
			for (p = 1; p <= ncmds; p++) {
				k = "cmd " cmds[p]
				un = median(vals[k, "upstream", "ns/op"]); on = median(vals[k, "ours", "ns/op"]); cn = median(vals[k, "ours-compare", "ns/op"])
				fn = median(vals[k, "validation-floor", "ns/op"]); fq = ratio(fn, un)
				r = count(vals[k, "ours", "ns/op"]); if (count(vals[k, "upstream", "ns/op"]) < r) r = count(vals[k, "upstream", "ns/op"])
				q = ratio(on, un); cq = ratio(cn, un)
				if (q == "") verdict = "n/a"
				else if (q <= max_cmd) { verdict = "met"; cmet++ }
				else {
					verdict = "MISSED"; cmissed = cmissed " " cmds[p]
					if (cq != "" && cq <= max_cmd) { verdict = verdict " (compare only: met)"; cvalid = cvalid " " cmds[p] }
					if (fq != "" && fq > max_cmd) { verdict = verdict " (floor above target)"; cfloor = cfloor " " cmds[p] }
				}
				printf "%-36s %5d %12s %9s %8.2fx %13s %8sx %11s %8sx  %s\n", cmds[p], r, sprintf("%.1f", un / 1e6), sprintf("%.1f", on / 1e6), q, \
					(cn == "" ? "-" : sprintf("%.1f", cn / 1e6)), (cq == "" ? "-" : sprintf("%.2f", cq)), \
					(fn == "" ? "-" : sprintf("%.1f", fn / 1e6)), (fq == "" ? "-" : sprintf("%.2f", fq)), verdict
			}
			print ""
			if (cmissed != "") printf "Whole command: NOT MET on%s (met on %d of %d pairs)\n", cmissed, cmet, ncmds
			else printf "Whole command: MET on all %d pairs (<= %.1fx upstream)\n", ncmds, max_cmd
			if (cvalid != "") printf "  missed only through the apiserver'"'"'s validation (CEL compilation) on:%s\n", cvalid
			if (cfloor != "") printf "  the apiserver'"'"'s validation of the update alone exceeds %.1fx upstream on:%s\n", max_cmd, cfloor
		}
		if (nsizes > 0) {
			printf "\nLinearity: synthetic nested schemas of N properties, self-compare (medians)\n\n"
			printf "%8s %14s %12s %11s %17s %15s %14s %15s\n", "N", "ours ns/op", "ours ns/prop", "ours B/prop", "ours allocs/prop", "upstream ns/op", "upstream ns/prop", "upstream B/prop"
			lo = ""; hi = ""; blo = ""; bhi = ""
			for (s = 1; s <= nsizes; s++) {
				n = sizes[s]; k = "size " n
				on = median(vals[k, "ours", "ns/op"]); ob = median(vals[k, "ours", "B/op"]); oa = median(vals[k, "ours", "allocs/op"])
				un = median(vals[k, "upstream", "ns/op"]); ub = median(vals[k, "upstream", "B/op"])
				onp = ratio(on, n); obp = ratio(ob, n); oap = ratio(oa, n); unp = ratio(un, n); ubp = ratio(ub, n)
				if (onp != "") {
					if (lo == "" || onp < lo) lo = onp
					if (hi == "" || onp > hi) hi = onp
				}
				if (obp != "") {
					if (blo == "" || obp < blo) blo = obp
					if (bhi == "" || obp > bhi) bhi = obp
				}
				printf "%8s %14s %12s %11s %17s %15s %16s %15s\n", commas(n), commas(on), fmtf(onp), fmtf(obp), sprintf("%.2f", oap), commas(un), fmtf(unp), commas(ubp)
			}
			print ""
			if (lo != "" && lo > 0) {
				spread = hi / lo
				printf "Linearity: ours %.0f..%.0f ns/prop (spread %.2fx), %.0f..%.0f B/prop (spread %.2fx): %s\n", lo, hi, spread, blo, bhi, bhi / blo, \
					(spread <= max_spread ? "flat (linear in size)" : "NOT flat (spread > " max_spread "x)")
			}
		}
	}' "$1"
}

if [ "${1:-}" = "--summarize" ]; then
	[ $# -eq 2 ] || { echo "usage: hack/bench.sh --summarize FILE" >&2; exit 2; }
	summarize "$2"
	exit 0
fi

prometheuses="${root}/.cache/crds/prometheus-operator/monitoring.coreos.com_prometheuses.yaml"
if [ ! -f "${prometheuses}" ]; then
	echo "bench: real CRDs missing in .cache/crds, running hack/fetch-crds.sh" >&2
	"${root}/hack/fetch-crds.sh" || echo "bench: hack/fetch-crds.sh failed" >&2
fi
if [ ! -f "${prometheuses}" ]; then
	echo "bench: SKIPPING the real CRD pairs: .cache/crds has no prometheuses CRD (run hack/fetch-crds.sh); only the linearity series runs" >&2
fi

mkdir -p "${out_dir}"
raw="${out_dir}/latest.txt"
sanity="${out_dir}/sanity.txt"
[ -f "${raw}" ] && mv "${raw}" "${out_dir}/previous.txt"

cd "${bench_dir}"
go vet ./...

echo "bench: sanity check (what each engine reports)" >&2
if ! go test -run '^TestSanity$' -count=1 -v . >"${sanity}" 2>&1; then
	cat "${sanity}" >&2
	echo "bench: TestSanity failed" >&2
	exit 1
fi
# A real CRD file missing skips TestSanity, and silently skips its pair's
# benchmarks: say so.
if grep -q -- '--- SKIP' "${sanity}"; then
	echo "bench: some real CRDs are missing, their pairs are skipped:" >&2
	grep -o 'real CRDs not found.*' "${sanity}" | sed 's/^/  /' >&2 || true
fi

echo "bench: go test -bench '${BENCH:-.}' -benchmem -count=${COUNT:-5}${BENCHTIME:+ -benchtime=${BENCHTIME}} (raw results: ${raw#"${root}"/})" >&2
args=(-run '^$' -bench "${BENCH:-.}" -benchmem -count="${COUNT:-5}")
if [ -n "${BENCHTIME:-}" ]; then
	args+=(-benchtime="${BENCHTIME}")
fi
# Show progress on stderr while keeping the raw output for the summary.
go test "${args[@]}" . | tee "${raw}" >&2

if [ "${BENCHSTAT:-1}" != "0" ]; then
	echo "" >&2
	echo "bench: benchstat (go run golang.org/x/perf/cmd/benchstat@latest)" >&2
	if ! (cd "${out_dir}" && go run golang.org/x/perf/cmd/benchstat@latest -col /engine latest.txt); then
		echo "bench: benchstat is not available; the summary below uses medians computed here" >&2
	fi
fi

summarize "${raw}"

echo ""
echo "Sanity (what each engine reports; upstream's ChangeValidator gives up on a version once a field is removed):"
echo ""
sed -n 's/.*sanity: /  /p' "${sanity}"
if grep -q -- '--- SKIP' "${sanity}"; then
	echo "  (skipped: real CRDs missing; run hack/fetch-crds.sh)"
fi

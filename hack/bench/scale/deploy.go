package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// deploy is the deploy benchmark (hack/bench-deploy.sh): an app of -n
// CRDs and -crs custom resources is deployed, then every CRD upgraded with
// a safe change, -rounds times with the check and without, each from the
// same state (the app's first release deployed again in between). It
// prints per variant the deploy's wall time, the check's own time (its
// timing lines, KAPP_CRD_UPGRADE_SAFETY_TIMING), the API requests the
// apiserver counted (apiserver_request_total before and after) and kapp's
// peak RSS; its last line is "preflight share: N%": the check's time over
// the time of the deploy that ran it.
func deploy(args []string) error {
	fs := flag.NewFlagSet("deploy", flag.ExitOnError)
	kapp := fs.String("kapp", "bin/kapp", "kapp binary")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	crds := fs.String("crds", ".cache/crds", "real CRDs (hack/fetch-crds.sh)")
	work := fs.String("work", ".cache/bench/deploy", "work folder")
	n := fs.Int("n", 300, "CRDs")
	crs := fs.Int("crs", 5000, "custom resources")
	rounds := fs.Int("rounds", 3, "upgrades per variant")
	settlePIDs := fs.String("settle", "", "pids (apiserver, etcd) to wait idle for before each measured deploy")
	profile := fs.String("profile", "", "write a CPU profile of the first deploy with the check here (KAPP_CPU_PROFILE)")
	_ = fs.Parse(args)
	pids, err := parsePIDs(*settlePIDs)
	if err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("-kubeconfig is required")
	}
	ctx := context.Background()
	cl, err := newCluster(*kubeconfig)
	if err != nil {
		return err
	}

	a, err := buildApp(*crds, filepath.Join(*work, "app"), *n, *crs)
	if err != nil {
		return err
	}
	fmt.Printf("app: %d CRDs (%.1f MiB of YAML, cycling %d real CRDs, each in its own group), %d custom resources over %d of them\n",
		a.crds, mib(a.crdBytes), a.sources, a.crs, a.kinds)
	fmt.Printf("upgrade: every CRD with a safe change (a new optional field, a description edit), the custom resources unchanged\n")

	env := []string{"KUBECONFIG=" + *kubeconfig, "KAPP_CRD_UPGRADE_SAFETY_CONFIG=", preflightTimingEnv + "=1"}
	deployApp := func(version string, check bool, extraEnv ...string) (measured, error) {
		args := []string{"deploy", "-a", "scale-bench", "-f", filepath.Join(a.dir, version), "-y", "--tty=false"}
		if check {
			args = append(args, "--preflight=CRDUpgradeSafety")
		}
		m, err := runMeasured(append(env, extraEnv...), *kapp, args...)
		if err == nil && m.exitCode != 0 {
			err = fmt.Errorf("kapp deploy %s (check %v) exited with %d:\n%s", version, check, m.exitCode, tail(m.stderr, 20))
		}
		return m, err
	}

	start := time.Now()
	if _, err := deployApp("v1", false); err != nil {
		return err
	}
	fmt.Printf("setup: first release deployed in %.0fs\n", time.Since(start).Seconds())

	type result struct {
		wall, check, offline, live time.Duration
		dryRuns, inFlight          int
		allocMiB                   float64 // allocated by kapp while the check ran
		gcs                        int     // garbage collections of kapp while the check ran
		rss                        int64
		kappCPU, clusterCPU        time.Duration // during the deploy: kapp's, the apiserver's and etcd's
		requests                   requestCounts
	}
	var with, without []result
	for r := 0; r < *rounds; r++ {
		for _, check := range []bool{true, false} {
			settle(pids)
			before, err := cl.requests(ctx, "bench.example.com")
			if err != nil {
				return err
			}
			var extra []string
			if check && r == 0 && *profile != "" {
				extra = append(extra, "KAPP_CPU_PROFILE="+*profile)
			}
			clusterCPU := cpuTime(pids)
			m, err := deployApp("v2", check, extra...)
			if err != nil {
				return err
			}
			clusterCPU = cpuTime(pids) - clusterCPU
			after, err := cl.requests(ctx, "bench.example.com")
			if err != nil {
				return err
			}
			res := result{wall: m.wall, rss: m.peakRSS, requests: after.minus(before), kappCPU: m.cpu, clusterCPU: clusterCPU}
			if check {
				t, ok := parseTiming(m.stderr)
				if !ok {
					return fmt.Errorf("no timing lines from the check in kapp's stderr:\n%s", tail(m.stderr, 20))
				}
				res.check, res.offline, res.live, res.dryRuns, res.inFlight = t.check, t.offline, t.live, t.dryRuns, t.inFlight
				res.allocMiB, res.gcs = t.allocMiB, t.gcs
				with = append(with, res)
			} else {
				without = append(without, res)
			}
			fmt.Fprintf(os.Stderr, "round %d, check %v: deploy %.1fs, check %.1fs, %0.f requests, peak RSS %.0f MiB\n",
				r+1, check, m.wall.Seconds(), res.check.Seconds(), res.requests.total(), mib(m.peakRSS))
			// Back to the first release, without the check.
			if _, err := deployApp("v1", false); err != nil {
				return err
			}
		}
	}

	med := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	secs := func(d func(result) time.Duration) func(result) float64 {
		return func(r result) float64 { return d(r).Seconds() }
	}
	wWall, woWall := med(with, secs(func(r result) time.Duration { return r.wall })), med(without, secs(func(r result) time.Duration { return r.wall }))
	check := med(with, secs(func(r result) time.Duration { return r.check }))
	fmt.Printf("\nmedians of %d rounds per variant:\n", *rounds)
	fmt.Printf("  deploy with the check:    %6.1fs   kapp peak RSS %4.0f MiB\n", wWall, med(with, func(r result) float64 { return mib(r.rss) }))
	fmt.Printf("  deploy without the check: %6.1fs   kapp peak RSS %4.0f MiB\n", woWall, med(without, func(r result) float64 { return mib(r.rss) }))
	fmt.Printf("  difference of the two:    %6.1fs\n", wWall-woWall)
	fmt.Printf("  CPU time, with / without: kapp %.1fs / %.1fs, apiserver and etcd %.1fs / %.1fs\n",
		med(with, secs(func(r result) time.Duration { return r.kappCPU })), med(without, secs(func(r result) time.Duration { return r.kappCPU })),
		med(with, secs(func(r result) time.Duration { return r.clusterCPU })), med(without, secs(func(r result) time.Duration { return r.clusterCPU })))
	fmt.Printf("  the check itself:         %6.1fs   (its timing line: %d CRDs, the last offline pass ended at %.1fs, the live checks after it %.1fs)\n",
		check, a.crds, med(with, secs(func(r result) time.Duration { return r.offline })), med(with, secs(func(r result) time.Duration { return r.live })))
	fmt.Printf("  allocated by the check:   %6.0f MiB (%.0f garbage collections of kapp, each marking kapp's whole live heap)\n",
		med(with, func(r result) float64 { return r.allocMiB }), med(with, func(r result) float64 { return float64(r.gcs) }))
	fmt.Printf("  server-side dry runs:     %6.0f    (one per CRD, at most %.0f in flight)\n",
		med(with, func(r result) float64 { return float64(r.dryRuns) }), med(with, func(r result) float64 { return float64(r.inFlight) }))

	fmt.Printf("\nAPI requests counted by the apiserver (apiserver_request_total, medians):\n")
	fmt.Printf("  %-42s %10s %10s %10s\n", "", "with", "without", "check's")
	cats := map[string]bool{}
	for _, r := range append(append([]result(nil), with...), without...) {
		for _, k := range r.requests.keys() {
			cats[k] = true
		}
	}
	var names []string
	for k := range cats {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range append(names, "total") {
		get := func(r result) float64 {
			if k == "total" {
				return r.requests.total()
			}
			return r.requests[k]
		}
		w, wo := med(with, get), med(without, get)
		fmt.Printf("  %-42s %10.0f %10.0f %10.0f\n", k, w, wo, w-wo)
	}
	fmt.Printf("  (the comparison reads no CRD: the old CRDs are the live objects kapp fetched; the dry runs are one per CRD by design)\n")
	fmt.Printf("preflight share: %.0f%%\n", 100*check/wWall)
	return nil
}

const preflightTimingEnv = "KAPP_CRD_UPGRADE_SAFETY_TIMING"

type checkTiming struct {
	check, offline, live time.Duration
	dryRuns, inFlight    int
	objects              int
	allocMiB             float64
	gcs                  int
}

var (
	checkLine    = regexp.MustCompile(`CRDUpgradeSafety timing: check (\d+)ms(?: \(allocated ([\d.]+) MiB, (\d+) garbage collections\))?`)
	evaluateLine = regexp.MustCompile(`CRDUpgradeSafety timing: evaluate (\d+)ms \(offline (\d+)ms: \d+ CRD changes, \d+ removals(?:; live (\d+)ms: (\d+) server-side dry runs, at most (\d+) in flight; \d+ LIST pages, (\d+) custom resources validated)?`)
)

// parseTiming reads the check's timing lines (the last of each).
func parseTiming(stderr string) (checkTiming, bool) {
	var t checkTiming
	ms := func(s string) time.Duration { v, _ := strconv.Atoi(s); return time.Duration(v) * time.Millisecond }
	atoi := func(s string) int { v, _ := strconv.Atoi(s); return v }
	found := false
	for _, l := range strings.Split(stderr, "\n") {
		if m := checkLine.FindStringSubmatch(l); m != nil {
			t.check, found = ms(m[1]), true
			t.allocMiB, _ = strconv.ParseFloat(m[2], 64)
			t.gcs = atoi(m[3])
		}
		if m := evaluateLine.FindStringSubmatch(l); m != nil {
			t.offline, t.live = ms(m[2]), ms(m[3])
			t.dryRuns, t.inFlight, t.objects = atoi(m[4]), atoi(m[5]), atoi(m[6])
			if !found {
				t.check = ms(m[1])
			}
			found = true
		}
	}
	return t, found
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

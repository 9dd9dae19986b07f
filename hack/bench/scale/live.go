package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// live is the many-custom-resources benchmark (hack/bench-live.sh): a
// real CRD (its own group) gets custom resources created directly through
// the API, concurrently, up to each of -counts; at each count `kapp tools
// crd-upgrade-safety --file2 NEW` (NEW: the CRD with a safe change) runs
// against the cluster -runs times. It prints per count the time of the
// existingResources check (the live part of the check's timing line: the
// LIST pages and the validation of every custom resource), per resource,
// and kapp's peak RSS; then how both grew from the first count to the last
// (time: linear; memory: flat).
func live(args []string) error {
	fs := flag.NewFlagSet("live", flag.ExitOnError)
	kapp := fs.String("kapp", "bin/kapp", "kapp binary")
	baseline := fs.String("baseline", "", "another kapp binary measured on the same objects, runs alternating (\"\": none)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	src := fs.String("crd", ".cache/crds/cert-manager/cert-manager.io_certificates.yaml", "real CRD file")
	work := fs.String("work", ".cache/bench/live", "work folder")
	countsFlag := fs.String("counts", "10000,100000", "custom resource counts, increasing")
	runs := fs.Int("runs", 3, "runs per count")
	workers := fs.Int("workers", 32, "concurrent create requests")
	removeVersion := fs.Bool("remove-version", false, "also measure an update that removes an unserved version "+
		"(the managedFields and ownerReferences reads: every custom resource once, and the metadata of every object of the cluster), "+
		"runs alternating with the safe change")
	_ = fs.Parse(args)
	if *kubeconfig == "" {
		return errors.New("-kubeconfig is required")
	}
	var counts []int
	for _, c := range strings.Split(*countsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil {
			return fmt.Errorf("-counts: %w", err)
		}
		counts = append(counts, n)
	}
	ctx := context.Background()
	cl, err := newCluster(*kubeconfig)
	if err != nil {
		return err
	}

	obj, err := readObject(*src)
	if err != nil {
		return err
	}
	rename(obj, "live.bench.example.com")
	if *removeVersion {
		addUnservedVersion(obj, "v0alpha1")
	}
	oldYAML, crd, err := marshalCRD(obj)
	if err != nil {
		return err
	}
	changed, _ := readObjectBytes(oldYAML)
	safeChangeCRD(changed, true)
	newYAML, _, err := marshalCRD(changed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*work, 0o755); err != nil {
		return err
	}
	newFile := filepath.Join(*work, "new.yaml")
	if err := os.WriteFile(newFile, newYAML, 0o644); err != nil {
		return err
	}
	removalFile := ""
	if *removeVersion {
		removed, _ := readObjectBytes(newYAML)
		dropVersion(removed, "v0alpha1")
		removedYAML, _, err := marshalCRD(removed)
		if err != nil {
			return err
		}
		removalFile = filepath.Join(*work, "new-version-removed.yaml")
		if err := os.WriteFile(removalFile, removedYAML, 0o644); err != nil {
			return err
		}
	}
	crs, err := customResourcesOf(crd)
	if err != nil {
		return fmt.Errorf("%s: %w", *src, err)
	}
	if err := cl.applyCRD(ctx, crd); err != nil {
		return err
	}
	fmt.Printf("CRD %s (%s, %.0f KB), custom resources like %s created through the API, %d at a time\n",
		crd.Name, filepath.Base(*src), float64(len(oldYAML))/1024, crs.gvr.Resource, *workers)

	type row struct {
		count        int
		check, whole time.Duration
		objects      int
		rss          int64
	}
	var rows, baseRows []row
	var removals []time.Duration // per count: the whole command on the update that removes a version
	created := 0
	for _, count := range counts {
		start := time.Now()
		if err := cl.createCustomResources(ctx, crs, created, count, *workers); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "created %d custom resources in %.0fs\n", count-created, time.Since(start).Seconds())
		created = count

		bins := []string{*kapp}
		if *baseline != "" {
			bins = append(bins, *baseline)
		}
		checks := make([][]time.Duration, len(bins))
		wholes := make([][]time.Duration, len(bins))
		rs := make([]row, len(bins))
		for i := 0; i < *runs; i++ {
			for b, bin := range bins { // alternating: both see the same load
				m, err := runMeasured([]string{"KUBECONFIG=" + *kubeconfig, preflightTimingEnv + "=1"},
					bin, "tools", "crd-upgrade-safety", "--file2", newFile, "--tty=false")
				if err != nil {
					return err
				}
				if m.exitCode != 0 {
					return fmt.Errorf("%s tools crd-upgrade-safety exited with %d:\n%s", bin, m.exitCode, tail(m.stderr, 20))
				}
				t, ok := parseTiming(m.stderr)
				if !ok {
					return fmt.Errorf("no timing line in the stderr of %s:\n%s", bin, tail(m.stderr, 20))
				}
				checks[b], wholes[b] = append(checks[b], t.live), append(wholes[b], m.wall)
				rs[b].objects, rs[b].rss = t.objects, max(rs[b].rss, m.peakRSS)
			}
		}
		if removalFile != "" {
			var ws []time.Duration
			for i := 0; i < *runs; i++ {
				m, err := runMeasured([]string{"KUBECONFIG=" + *kubeconfig, preflightTimingEnv + "=1"},
					*kapp, "tools", "crd-upgrade-safety", "--file2", removalFile, "--tty=false")
				if err != nil {
					return err
				}
				if m.exitCode != 0 {
					return fmt.Errorf("%s tools crd-upgrade-safety (version removed) exited with %d:\n%s", *kapp, m.exitCode, tail(m.stderr, 20))
				}
				ws = append(ws, m.wall)
			}
			removals = append(removals, medianDuration(ws))
		}
		for b := range bins {
			rs[b].count, rs[b].check, rs[b].whole = count, medianDuration(checks[b]), medianDuration(wholes[b])
			if rs[b].objects != count {
				return fmt.Errorf("%s validated %d custom resources, want %d", bins[b], rs[b].objects, count)
			}
		}
		rows = append(rows, rs[0])
		if len(rs) > 1 {
			baseRows = append(baseRows, rs[1])
		}
	}

	fmt.Printf("\n%14s %20s %14s %14s %14s\n", "custom res.", "existingResources", "per resource", "whole command", "kapp peak RSS")
	for _, r := range rows {
		fmt.Printf("%14d %19.2fs %12.1fµs %13.2fs %10.0f MiB\n", r.count, r.check.Seconds(),
			float64(r.check.Microseconds())/float64(r.count), r.whole.Seconds(), mib(r.rss))
	}
	for i, b := range baseRows {
		fmt.Printf("baseline %s at %d: existingResources %.2fs, peak RSS %.0f MiB: %s takes %.2fx its time, %.2fx its memory\n",
			*baseline, b.count, b.check.Seconds(), mib(b.rss), *kapp, rows[i].check.Seconds()/b.check.Seconds(), float64(rows[i].rss)/float64(b.rss))
	}
	for i, w := range removals {
		fmt.Printf("version removed at %d custom resources: whole command %.2fs (%.2fs more than the safe change: "+
			"the managedFields list of every custom resource and the ownerReferences read of every object's metadata)\n",
			rows[i].count, w.Seconds(), (w - rows[i].whole).Seconds())
	}
	first, last := rows[0], rows[len(rows)-1]
	fmt.Printf("%dx the custom resources: existingResources took %.1fx the time (linear: %dx), kapp's peak RSS %.2fx (flat: 1x)\n",
		last.count/first.count, last.check.Seconds()/first.check.Seconds(), last.count/first.count, float64(last.rss)/float64(first.rss))
	return nil
}

func medianDuration(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// addUnservedVersion adds to a CRD an unserved, non-storage copy of its
// first version named name.
func addUnservedVersion(crd map[string]any, name string) {
	versions, _ := dig(crd, "spec", "versions").([]any)
	if len(versions) == 0 {
		return
	}
	first, _ := versions[0].(map[string]any)
	v := deepCopyMap(first)
	v["name"], v["served"], v["storage"] = name, false, false
	spec := crd["spec"].(map[string]any)
	spec["versions"] = append([]any{v}, versions...)
}

// dropVersion removes the version named name from a CRD.
func dropVersion(crd map[string]any, name string) {
	versions, _ := dig(crd, "spec", "versions").([]any)
	var kept []any
	for _, v := range versions {
		if m, _ := v.(map[string]any); m["name"] != name {
			kept = append(kept, v)
		}
	}
	crd["spec"].(map[string]any)["versions"] = kept
}

func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			out[k] = deepCopyMap(x)
		case []any:
			l := make([]any, len(x))
			for i, e := range x {
				if em, ok := e.(map[string]any); ok {
					l[i] = deepCopyMap(em)
				} else {
					l[i] = e
				}
			}
			out[k] = l
		default:
			out[k] = v
		}
	}
	return out
}

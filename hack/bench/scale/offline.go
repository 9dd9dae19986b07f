package main

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// offline runs `kapp tools crd-upgrade-safety --file OLD --file2 NEW` as a
// new user would over a whole operator set (hack/bench-offline.sh) and
// prints, per binary, the median wall time, CPU time and the peak RSS over
// the runs; the verdict is the first binary's median against -target.
//
//	scale offline [-runs N] [-target 8s] -old DIR -new DIR KAPP [BASELINE_KAPP ...]
func offline(args []string) error {
	fs := flag.NewFlagSet("offline", flag.ExitOnError)
	runs := fs.Int("runs", 3, "runs per binary")
	target := fs.Duration("target", 8*time.Second, "median wall time allowed for the first binary")
	oldDir := fs.String("old", "", "old CRDs (a folder)")
	newDir := fs.String("new", "", "new CRDs (a folder)")
	_ = fs.Parse(args)
	bins := fs.Args()
	if len(bins) == 0 || *oldDir == "" || *newDir == "" {
		return errors.New("want -old DIR -new DIR and at least one kapp binary")
	}
	size, err := inputBytes(*oldDir, *newDir)
	if err != nil {
		return err
	}
	fmt.Printf("input: %s and %s, %.1f MiB in all; %d runs per binary, medians\n", *oldDir, *newDir, mib(size), *runs)
	fmt.Printf("%-32s %10s %10s %12s\n", "kapp", "wall", "cpu", "peak RSS")
	var first time.Duration
	for i, bin := range bins {
		var walls, cpus []time.Duration
		var peak int64
		for r := 0; r < *runs; r++ {
			m, err := runMeasured(nil, bin, "tools", "crd-upgrade-safety", "--file", *oldDir, "--file2", *newDir, "--tty=false")
			if err != nil {
				return err
			}
			if m.exitCode != 0 && m.exitCode != 3 {
				return fmt.Errorf("%s exited with %d: %s", bin, m.exitCode, tail(m.stderr, 10))
			}
			walls, cpus = append(walls, m.wall), append(cpus, m.cpu)
			peak = max(peak, m.peakRSS)
		}
		wall, cpu := medianDuration(walls), medianDuration(cpus)
		if i == 0 {
			first = wall
		}
		fmt.Printf("%-32s %9.2fs %9.2fs %8.0f MiB\n", bin, wall.Seconds(), cpu.Seconds(), mib(peak))
	}
	verdict := "met"
	if first > *target {
		verdict = "NOT MET"
	}
	fmt.Printf("offline: %s took %.2fs (target < %s): %s\n", bins[0], first.Seconds(), *target, verdict)
	return nil
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"
)

// memory runs `kapp tools crd-upgrade-safety -f OLD --file2 NEW` per named
// input, -runs times, and prints per input the input bytes (both sides),
// the median wall time, the highest peak RSS, its ratio to the input, and
// the ratio of what it adds to the peak RSS of `kapp version` (printed
// first: the binary's own memory, which no input changes). The target
// holds the ratio of the inputs whose name does not start with "(info)".
func memory(args []string) error {
	fs := flag.NewFlagSet("memory", flag.ExitOnError)
	kapp := fs.String("kapp", "bin/kapp", "kapp binary")
	runs := fs.Int("runs", 3, "runs per input")
	target := fs.Float64("target", 10, "highest peak RSS / input bytes allowed")
	_ = fs.Parse(args)
	rest := fs.Args()
	if len(rest) == 0 || len(rest)%3 != 0 {
		return errors.New("want NAME OLD NEW triples")
	}

	base, err := runMeasured(nil, *kapp, "version")
	if err != nil {
		return err
	}
	fmt.Printf("%-40s %12s %11s %12s %7s %13s\n", "input (old + new files)", "input bytes", "wall", "peak RSS", "ratio", "above version")
	fmt.Printf("%-40s %12s %11s %9.1f MiB %7s %13s\n", "(kapp version: no input)", "-", "-", mib(base.peakRSS), "-", "-")
	worst := 0.0
	for i := 0; i < len(rest); i += 3 {
		name, old, new := rest[i], rest[i+1], rest[i+2]
		size, err := inputBytes(old, new)
		if err != nil {
			return err
		}
		var walls []time.Duration
		var peak int64
		for r := 0; r < *runs; r++ {
			m, err := runMeasured(nil, *kapp, "tools", "crd-upgrade-safety", "-f", old, "--file2", new, "--tty=false")
			if err != nil {
				return err
			}
			if m.exitCode != 0 && m.exitCode != 3 {
				return fmt.Errorf("%s: kapp exited with %d: %s", name, m.exitCode, m.stderr)
			}
			walls = append(walls, m.wall)
			peak = max(peak, m.peakRSS)
		}
		sort.Slice(walls, func(a, b int) bool { return walls[a] < walls[b] })
		ratio := float64(peak) / float64(size)
		if !strings.HasPrefix(name, "(info)") {
			worst = max(worst, ratio)
		}
		fmt.Printf("%-40s %12d %9.0fms %9.1f MiB %6.1fx %12.1fx\n", name, size, float64(walls[len(walls)/2].Microseconds())/1000,
			mib(peak), ratio, float64(peak-base.peakRSS)/float64(size))
	}
	verdict := "met"
	if worst > *target {
		verdict = "NOT MET"
	}
	fmt.Printf("memory: highest peak RSS / input %.1fx (target <= %.0fx, inputs not marked (info)): %s\n", worst, *target, verdict)
	return nil
}

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// settleWindow is how long one CPU sample of settle lasts.
const settleWindow = 2 * time.Second

// settle waits until the processes (the apiserver, etcd) have settled:
// after CRDs change, the apiserver rebuilds their OpenAPI documents in the
// background, which would slow down the next deploy measured. The criterion
// is relative, not an absolute idle level (an apiserver serving 300 CRDs
// idles at about 6% of a core): see settled. At most 10 minutes.
func settle(pids []int) {
	if len(pids) == 0 {
		return
	}
	start := time.Now()
	deadline := start.Add(10 * time.Minute)
	var samples []time.Duration
	last := cpuTime(pids)
	for time.Now().Before(deadline) {
		time.Sleep(settleWindow)
		now := cpuTime(pids)
		samples = append(samples, now-last)
		last = now
		if settled(samples, settleWindow) {
			fmt.Fprintf(os.Stderr, "settled after %s (CPU per %s window: %s)\n",
				time.Since(start).Round(time.Second), settleWindow, formatSamples(samples))
			return
		}
	}
	fmt.Fprintf(os.Stderr, "not settled after %s (CPU per %s window: %s)\n",
		time.Since(start).Round(time.Second), settleWindow, formatSamples(samples))
}

// settled tells, from the CPU time used in consecutive windows of the same
// length, whether the background work is over: the last window used less
// than 5% of a core, or CPU use stopped falling, that is the last two
// windows each used at least 80% of what the window before them used
// (within one clock tick, 10 ms) and at most half a core.
func settled(samples []time.Duration, window time.Duration) bool {
	n := len(samples)
	if n == 0 {
		return false
	}
	if samples[n-1] < window/20 {
		return true
	}
	if n < 3 {
		return false
	}
	const tick = 10 * time.Millisecond
	for _, i := range []int{n - 2, n - 1} {
		if samples[i] > window/2 || samples[i]+tick < samples[i-1]*8/10 {
			return false
		}
	}
	return true
}

func formatSamples(samples []time.Duration) string {
	const max = 8
	from := 0
	if len(samples) > max {
		from = len(samples) - max
	}
	parts := make([]string, 0, max+1)
	if from > 0 {
		parts = append(parts, "...")
	}
	for _, s := range samples[from:] {
		parts = append(parts, s.Round(10*time.Millisecond).String())
	}
	return strings.Join(parts, " ")
}

// cpuTime is the CPU time (user and system) the processes have used so
// far, from /proc/PID/stat; processes gone count nothing.
func cpuTime(pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces): utime is the
		// 14th field of the line, stime the 15th.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+s) * 10 * time.Millisecond // USER_HZ 100
	}
	return total
}

// parsePIDs reads a comma-separated list of process ids.
func parsePIDs(s string) ([]int, error) {
	var pids []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("pid %q: %w", f, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

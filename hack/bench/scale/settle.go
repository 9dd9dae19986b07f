package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// settle waits until the processes (the apiserver, etcd) are idle: after
// CRDs change, the apiserver rebuilds their OpenAPI documents in the
// background, which would slow down the next deploy measured. Idle: less
// than 5% of a core over 2 seconds (at most 10 minutes).
func settle(pids []int) {
	if len(pids) == 0 {
		return
	}
	cpu := func() time.Duration { return cpuTime(pids) }
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		before := cpu()
		time.Sleep(2 * time.Second)
		if cpu()-before < 100*time.Millisecond {
			return
		}
	}
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

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// measured is one run of a process: its wall time, CPU time and peak
// resident set size (the kernel's rusage maxrss, the process's VmHWM).
type measured struct {
	wall     time.Duration
	cpu      time.Duration // user and system time of the process
	peakRSS  int64         // bytes
	exitCode int
	stderr   string
}

// runMeasured runs name with args (env added to the environment) and
// measures it. A non-zero exit status is returned in exitCode, not as an
// error.
func runMeasured(env []string, name string, args ...string) (measured, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stdout = nil
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	m := measured{wall: time.Since(start), stderr: stderr.String()}
	if cmd.ProcessState == nil {
		return m, fmt.Errorf("running %s: %w", name, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.peakRSS = ru.Maxrss * 1024 // KiB on Linux
		m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	m.exitCode = cmd.ProcessState.ExitCode()
	return m, nil
}

// inputBytes sums the sizes of the .yaml/.yml/.json files under paths.
func inputBytes(paths ...string) (int64, error) {
	var n int64
	for _, p := range paths {
		err := filepath.Walk(p, func(path string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			switch filepath.Ext(path) {
			case ".yaml", ".yml", ".json":
				if !info.IsDir() {
					n += info.Size()
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

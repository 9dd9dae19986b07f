package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// ProfileEnvVar names a file to write a CPU profile of the whole kapp run
// to (go tool pprof), for performance work: hack/bench-deploy.sh profiles
// a deploy with it.
const ProfileEnvVar = "KAPP_CPU_PROFILE"

// startProfile starts the CPU profile ProfileEnvVar asks for and returns
// what stops it.
func startProfile() func() {
	path := os.Getenv(ProfileEnvVar)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kapp: %s: %v\n", ProfileEnvVar, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStartProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")

	t.Setenv(ProfileEnvVar, "")
	startProfile()()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("without %s: want no profile, got %v", ProfileEnvVar, err)
	}

	t.Setenv(ProfileEnvVar, path)
	stop := startProfile()
	for i := 0; i < 1e6; i++ {
		_ = filepath.Join("a", "b")
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A pprof profile is gzip-compressed protobuf.
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("%s: not a pprof profile (%d bytes)", path, len(b))
	}

	// A path that cannot be written: the run goes on without a profile.
	t.Setenv(ProfileEnvVar, filepath.Join(t.TempDir(), "missing", "cpu.pprof"))
	startProfile()()
}

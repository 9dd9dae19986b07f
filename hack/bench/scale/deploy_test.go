package main

import (
	"testing"
	"time"
)

// TestParseTiming reads the timing lines kapp prints with
// KAPP_CRD_UPGRADE_SAFETY_TIMING=1 (pkg/kapp/evaluation/timing.go): the
// last of each kind, and the check line with or without its allocation
// figures.
func TestParseTiming(t *testing.T) {
	stderr := "some kapp output\n" +
		"CRDUpgradeSafety timing: evaluate 1ms (offline 1ms: 1 CRD changes, 0 removals)\n" +
		"CRDUpgradeSafety timing: evaluate 23098ms (offline 22568ms: 300 CRD changes, 0 removals; live 530ms: 300 server-side dry runs, " +
		"at most 16 in flight; 368 LIST pages, 7769 custom resources validated; 0 counts)\n" +
		"CRDUpgradeSafety timing: check 23741ms (allocated 4123.5 MiB, 7 garbage collections)\n"
	got, ok := parseTiming(stderr)
	if !ok {
		t.Fatal("no timing found")
	}
	want := checkTiming{check: 23741 * time.Millisecond, offline: 22568 * time.Millisecond, live: 530 * time.Millisecond,
		dryRuns: 300, inFlight: 16, objects: 7769, allocMiB: 4123.5, gcs: 7}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	got, ok = parseTiming("CRDUpgradeSafety timing: check 12ms\n")
	if !ok || got.check != 12*time.Millisecond || got.allocMiB != 0 || got.gcs != 0 {
		t.Fatalf("a check line without figures: got %+v, %v", got, ok)
	}
	if _, ok := parseTiming("nothing\n"); ok {
		t.Fatal("found timing in output without any")
	}
}

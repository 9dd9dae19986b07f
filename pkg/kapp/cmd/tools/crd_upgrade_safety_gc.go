package tools

import (
	"os"
	"runtime/debug"
)

// GCPercentFor is the garbage collector's target (as GOGC) for inputs of
// n bytes (old and new files) while the command runs; a GOGC in the
// environment wins. Decoding and validating CRDs allocates several times
// their size in short-lived objects, and the apiserver's validation (CEL
// compilation above all) many times more:
//
//   - from hugeInput (64 MiB) on, Go's default with a soft memory limit of
//     MemoryLimitFor(n) (7x the input): the heap grows freely below the
//     limit, and the collector works harder only near it. On 300 real CRDs
//     (105 MiB of input, hack/bench-offline.sh) a fixed target of 25 made
//     collections half of the command's CPU (15.2 s, against 7.8 s with
//     the limit);
//   - from largeInput on, 25: the heap stays within 1.25x its live data.
//     At Go's default the peak resident memory reached 14x the input on a
//     20 MB CRD pair and 12x on prometheus-operator's CRDs; at 25 about 8x
//     and 9x (hack/bench-memory.sh). A memory limit does not do for these:
//     the binary's own 45 MiB is most of 8x their size;
//   - below smallInput (a CI run on a few CRDs), 400: the heap is small
//     beside the binary's own memory, and collections were half the time
//     of the whole command on one large CRD pair (hack/bench.sh, "Whole
//     command");
//   - in between, Go's default.
//
// Tuned last: the decoding and the validations were made lean first.
func GCPercentFor(n int) int {
	switch {
	case n < smallInput:
		return 400
	case n < largeInput:
		return 100
	case n < hugeInput:
		return 25
	default:
		return 100
	}
}

// MemoryLimitFor is the garbage collector's soft memory limit (as
// GOMEMLIMIT) for inputs of n bytes while the command runs; 0 for none. A
// GOMEMLIMIT in the environment wins.
func MemoryLimitFor(n int) int64 {
	if n < hugeInput {
		return 0
	}
	return 7 * int64(n)
}

// smallInput and largeInput bound the input sizes (old and new files) of
// GCPercentFor's targets.
const (
	smallInput = 2 << 20
	largeInput = 4 << 20
	hugeInput  = 64 << 20
)

// tuneGC sets the garbage collector's target for inputs of n bytes, unless
// GOGC is set; the function startGC returned restores the previous target.
func tuneGC(n int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercentFor(n))
	}
	if limit := MemoryLimitFor(n); limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
}

// startGC sets the collector's target for small inputs (loading sets it
// again once it knows their size, tuneGC) and returns the function that
// restores the caller's target and memory limit.
func startGC() (restore func()) {
	setPercent := os.Getenv("GOGC") == ""
	var percent int
	if setPercent {
		percent = debug.SetGCPercent(GCPercentFor(0))
	}
	limit := debug.SetMemoryLimit(-1)
	return func() {
		debug.SetMemoryLimit(limit)
		if setPercent {
			debug.SetGCPercent(percent)
		}
	}
}

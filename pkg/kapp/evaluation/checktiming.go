package evaluation

import (
	"fmt"
	"io"
	"runtime/metrics"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// CheckTiming measures a whole run of a front-end for TimingEnvVar (the
// kapp hook's, from the change graph to its error): its wall time, the
// bytes it allocated and the garbage collections they caused (the
// process's, so a deploy's other goroutines count too: kapp runs nothing
// else while the check runs). In a deploy, kapp's own live heap is large,
// and every collection the check causes marks all of it. The evaluation's
// own line (evaluationTiming, timing.go) splits the evaluation within it.
type CheckTiming struct {
	out   io.Writer
	start time.Time
	mem   [2]metrics.Sample
}

// StartCheckTiming starts measuring when out is set (TimingWriter); nil
// otherwise, whose Print prints nothing.
func StartCheckTiming(out io.Writer) *CheckTiming {
	if out == nil {
		return nil
	}
	t := &CheckTiming{out: out, mem: [2]metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}}
	metrics.Read(t.mem[:])
	t.start = time.Now()
	return t
}

// Print prints the check's timing line.
func (t *CheckTiming) Print() {
	if t == nil {
		return
	}
	wall := time.Since(t.start)
	end := [2]metrics.Sample{{Name: t.mem[0].Name}, {Name: t.mem[1].Name}}
	metrics.Read(end[:])
	fmt.Fprintf(t.out, "%s timing: check %dms (allocated %.1f MiB, %d garbage collections)\n", config.CheckName, wall.Milliseconds(),
		float64(end[0].Value.Uint64()-t.mem[0].Value.Uint64())/(1<<20), end[1].Value.Uint64()-t.mem[1].Value.Uint64())
}

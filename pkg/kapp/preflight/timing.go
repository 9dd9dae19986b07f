package preflight

import (
	"fmt"
	"io"
	"runtime/metrics"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
)

// timingOut is where the check's timing line goes
// (evaluation.TimingEnvVar); tests replace it.
var timingOut = evaluation.TimingWriter

// checkTiming measures a whole run of the check for TimingEnvVar: its wall
// time, the bytes it allocated and the garbage collections they caused
// (the process's, so a deploy's other goroutines count too: kapp runs
// nothing else while the check runs). In a deploy, kapp's own live heap is
// large, and every collection the check causes marks all of it.
type checkTiming struct {
	out   io.Writer
	start time.Time
	mem   [2]metrics.Sample
}

func startCheckTiming(out io.Writer) *checkTiming {
	t := &checkTiming{out: out, mem: [2]metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}}
	metrics.Read(t.mem[:])
	t.start = time.Now()
	return t
}

func (t *checkTiming) print() {
	wall := time.Since(t.start)
	end := [2]metrics.Sample{{Name: t.mem[0].Name}, {Name: t.mem[1].Name}}
	metrics.Read(end[:])
	fmt.Fprintf(t.out, "%s timing: check %dms (allocated %.1f MiB, %d garbage collections)\n", config.CheckName, wall.Milliseconds(),
		float64(end[0].Value.Uint64()-t.mem[0].Value.Uint64())/(1<<20), end[1].Value.Uint64()-t.mem[1].Value.Uint64())
}

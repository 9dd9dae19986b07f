package evaluation

import "io"

// TimingCounting is the decorator the timing (TimingEnvVar) wraps a
// cluster in.
func TimingCounting(c Cluster) Cluster { return (&evaluationTiming{}).counting(c) }

// SetTimingOut makes the timing print to w (nil: off) and returns the undo.
func SetTimingOut(w io.Writer) (undo func()) {
	old := timingOut
	timingOut = func() io.Writer { return w }
	return func() { timingOut = old }
}

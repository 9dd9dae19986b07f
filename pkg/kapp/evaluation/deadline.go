package evaluation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// ErrLiveChecksTimeout is matched (errors.Is) by the error of a run whose
// waits on the cluster did not end within liveChecksTimeout.
var ErrLiveChecksTimeout = errors.New("liveChecksTimeout exceeded")

// liveDeadline is the cause of a context ended by WithLiveDeadline. The
// HTTP client reports a request ended by a context with its cause, so this
// is also the error that API calls wrap: it matches ErrLiveChecksTimeout
// and context.DeadlineExceeded.
type liveDeadline struct{ timeout time.Duration }

func (d *liveDeadline) Error() string {
	return fmt.Sprintf("deadline of %s (liveChecksTimeout) exceeded", d.timeout)
}

func (d *liveDeadline) Unwrap() []error {
	return []error{ErrLiveChecksTimeout, context.DeadlineExceeded}
}

// WithLiveDeadline bounds every wait of one run on the cluster (fetching
// live CRDs, server-side dry runs, listing and counting custom resources)
// by timeout, the
// configuration's liveChecksTimeout. The waits it ends fail the run (fail
// closed) with a *DeadlineError naming what was waiting.
func WithLiveDeadline(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, timeout, &liveDeadline{timeout: timeout})
}

// DeadlineError is the error of a wait on the cluster that the deadline of
// WithLiveDeadline ended. It unwraps to ErrLiveChecksTimeout and to the
// error the wait returned (a context.DeadlineExceeded, usually wrapped by
// the API client), whose text it does not repeat.
type DeadlineError struct {
	Timeout time.Duration
	// Progress says how far the wait got, e.g. "after reading 3 pages
	// (1500 custom resources)"; empty when there is nothing to say.
	Progress string
	Err      error
}

func (e *DeadlineError) Error() string {
	msg := fmt.Sprintf("deadline of %s (liveChecksTimeout) exceeded", e.Timeout)
	if e.Progress != "" {
		msg += " " + e.Progress
	}
	return msg
}

func (e *DeadlineError) Unwrap() []error { return []error{ErrLiveChecksTimeout, e.Err} }

// deadlineError wraps err, the error of a wait on the cluster, in a
// *DeadlineError when the deadline of WithLiveDeadline is what ended ctx;
// nil for any other error (a sibling's cancellation, an API error).
func deadlineError(ctx context.Context, err error, progress string) *DeadlineError {
	var d *liveDeadline
	if err == nil || ctx.Err() == nil || !errors.As(context.Cause(ctx), &d) {
		return nil
	}
	return &DeadlineError{Timeout: d.timeout, Progress: progress, Err: err}
}

// pagesRead describes the progress of a paged LIST for a DeadlineError.
func pagesRead(pages, objects int) string {
	if pages == 0 {
		return "before the first page"
	}
	return fmt.Sprintf("after reading %d %s (%d %s)", pages, plural.Of(pages, "page", "pages"),
		objects, plural.Of(objects, "custom resource", "custom resources"))
}

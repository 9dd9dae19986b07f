// Package parallel runs indexed work on a bounded number of goroutines.
package parallel

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// errSiblingFailed is the cause of the context a failure cancels.
var errSiblingFailed = errors.New("a parallel task failed")

// ForEach runs fn(ctx, i) for i in [0, n) with at most limit calls at once
// and returns the error that explains the run, nil when every call
// succeeded.
//
// The first failure cancels the context of the other calls and stops
// handing out calls (one already handed out may still start). Calls that then fail with context.Canceled only echo that
// failure: their errors are dropped. Of the remaining errors, the one with
// the lowest index is returned, so the error depends on what failed, not on
// scheduling. When ctx itself ends (a deadline), the calls in flight fail
// with it, each with its own message, and these are real errors: the
// returned error is always one a call returned.
//
// A call that panics fails like one that returns an error: with a
// *PanicError. A long-running process (the admission webhook) answers the
// request it was serving instead of crashing.
func ForEach(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	if limit < 1 {
		limit = 1
	}
	if limit > n {
		limit = n
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	errs := make([]error, n)
	failed := make(chan struct{})
	var failOnce sync.Once
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < limit; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := call(ctx, i, fn); err != nil {
					errs[i] = err
					failOnce.Do(func() {
						close(failed)
						cancel(errSiblingFailed)
					})
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case <-failed:
			break feed
		default:
		}
		select {
		case next <- i:
		case <-failed:
			break feed
		}
	}
	close(next)
	wg.Wait()
	return explain(errs, errors.Is(context.Cause(ctx), errSiblingFailed))
}

// PanicError is the error of a call that panicked: the value it panicked
// with and the goroutine's stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// call runs fn, turning a panic into a *PanicError.
func call(ctx context.Context, i int, fn func(ctx context.Context, i int) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, i)
}

// explain picks the error of a run: the lowest-index error that is not a
// cancellation caused by a sibling's failure. If every error is such a
// cancellation (the first failure was itself a context.Canceled), the
// lowest-index error is returned: a failed run never returns nil.
func explain(errs []error, cancelledBySibling bool) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if first == nil {
			first = err
		}
		if cancelledBySibling && errors.Is(err, context.Canceled) {
			continue
		}
		return err
	}
	return first
}

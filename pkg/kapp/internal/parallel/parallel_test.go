package parallel

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestForEach(t *testing.T) {
	var running, peak, calls int32
	err := ForEach(context.Background(), 50, 4, func(context.Context, int) error {
		n := atomic.AddInt32(&running, 1)
		for {
			p := atomic.LoadInt32(&peak)
			if n <= p || atomic.CompareAndSwapInt32(&peak, p, n) {
				break
			}
		}
		atomic.AddInt32(&calls, 1)
		atomic.AddInt32(&running, -1)
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 50, calls)
	require.LessOrEqual(t, peak, int32(4))

	require.NoError(t, ForEach(context.Background(), 0, 4, nil))
}

func TestForEachReturnsLowestIndexError(t *testing.T) {
	err := ForEach(context.Background(), 10, 10, func(_ context.Context, i int) error {
		if i == 3 || i == 7 {
			return fmt.Errorf("task %d: %w", i, errors.New("boom"))
		}
		return nil
	})
	require.EqualError(t, err, "task 3: boom")
}

// waitForCancel is a call that waits on the cluster until its context
// ends, then reports it the way an API client does.
func waitForCancel(ctx context.Context, i int) error {
	<-ctx.Done()
	return fmt.Errorf("task %d: %w", i, ctx.Err())
}

// TestForEachReturnsTheFailureNotItsEcho: a failure cancels the siblings
// in flight; their "context canceled" errors must not hide it, even when
// their index is lower.
func TestForEachReturnsTheFailureNotItsEcho(t *testing.T) {
	for _, n := range []int{2, 10} {
		t.Run(fmt.Sprintf("%d tasks", n), func(t *testing.T) {
			started := make(chan struct{}, n)
			err := ForEach(context.Background(), n, n, func(ctx context.Context, i int) error {
				if i == n-1 {
					for j := 0; j < n-1; j++ {
						<-started // every sibling is waiting
					}
					return errors.New("listing widgets: forbidden")
				}
				started <- struct{}{}
				return waitForCancel(ctx, i)
			})
			require.EqualError(t, err, "listing widgets: forbidden")
		})
	}
}

// TestForEachFailureStopsFeeding: after a failure, calls stop being handed
// out (one handed out at the moment of the failure may still run).
func TestForEachFailureStopsFeeding(t *testing.T) {
	var calls int32
	err := ForEach(context.Background(), 10, 1, func(context.Context, int) error {
		atomic.AddInt32(&calls, 1)
		return errors.New("boom")
	})
	require.EqualError(t, err, "boom")
	require.LessOrEqual(t, calls, int32(2))
}

// TestForEachCanceledFailureIsReturned: a failure that is itself a
// context.Canceled (the call's own context, not ours) is still an error.
func TestForEachCanceledFailureIsReturned(t *testing.T) {
	err := ForEach(context.Background(), 3, 3, func(ctx context.Context, i int) error {
		if i == 1 {
			return fmt.Errorf("task 1: %w", context.Canceled)
		}
		return waitForCancel(ctx, i)
	})
	require.Error(t, err)
	require.ErrorIs(t, err, context.Canceled)
}

// TestForEachParentEnds: when the caller's context ends (a deadline, a
// cancellation), the errors of the calls in flight are real ones, not
// echoes: the lowest index wins, naming what it waited for.
func TestForEachParentEnds(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		err := ForEach(ctx, 5, 2, waitForCancel)
		require.EqualError(t, err, "task 0: context deadline exceeded")
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("cancellation", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := ForEach(ctx, 3, 3, waitForCancel)
		require.EqualError(t, err, "task 0: context canceled")
	})
	t.Run("calls that finish anyway", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, ForEach(ctx, 3, 1, func(context.Context, int) error { return nil }))
	})
}

// A panicking call fails the run with a *PanicError, and cancels the
// others, as an error would.
func TestForEachPanic(t *testing.T) {
	err := ForEach(context.Background(), 5, 2, func(ctx context.Context, i int) error {
		if i == 1 {
			panic("boom")
		}
		return nil
	})
	var p *PanicError
	require.ErrorAs(t, err, &p)
	require.Equal(t, "boom", p.Value)
	require.Equal(t, "panic: boom", err.Error())
	require.Contains(t, string(p.Stack), "parallel_test.go")
}

package parallel

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

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

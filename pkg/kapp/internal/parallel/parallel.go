// Package parallel runs indexed work on a bounded number of goroutines.
package parallel

import (
	"context"
	"sync"
)

// ForEach runs fn(ctx, i) for i in [0, n) with at most limit calls at
// once. The first failure cancels the context of the others; of several
// failures the one with the lowest index is returned, so errors do not
// depend on scheduling.
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < limit; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					errs[i] = err
					cancel()
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

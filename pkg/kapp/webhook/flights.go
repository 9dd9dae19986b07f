package webhook

import (
	"context"
	"sync"
	"time"
)

// flights lets concurrent reviews of the same request share one judgement
// (its reads of the cluster included) without ever judging a review on a
// read that started before the review arrived: a review joins only a
// flight that has not started; while a flight of its key runs, later
// reviews of the key gather in the next one, which starts when it ends.
// The judgement of a flight's reviews is therefore that of a read of the
// cluster which started after each of them arrived: the verdict reflects
// every object stored when the review arrived, as if each had read alone.
//
// Requests are "the same" when the key says so: the operation, resource,
// subresource and name, and the SHA-256 of both objects' JSON
// (objects.key): ten replicas of an operator applying their CRD at once, a
// client retrying, a burst of dry runs. Reviews of different objects never
// share anything.
type flights struct {
	mu     sync.Mutex
	groups map[string]*flightGroup
}

// flightGroup is the flights of one key: the one running, and the one
// gathering the reviews that arrived since it started.
type flightGroup struct {
	running, next *flight
}

// flight is one judgement, shared by its reviews.
type flight struct {
	// judge is the judgement of the review that opened the flight (its
	// reviews' are the same: they have its key).
	judge func(context.Context) verdict
	done  chan struct{}
	v     verdict
	// deadline is the latest of its reviews' deadlines (none: zero).
	deadline    time.Time
	hasDeadline bool
	noDeadline  bool // a review without a deadline joined
	members     int
}

func newFlights() *flights {
	return &flights{groups: map[string]*flightGroup{}}
}

// do returns the verdict of judge for a review of key within ctx: judged
// in a flight that starts after the review arrived, shared with the other
// reviews of key that join it before it starts. judge gets a context that
// ends at the latest deadline of the flight's reviews; a review whose own
// context ends first gets its context's error as the verdict.
func (fs *flights) do(ctx context.Context, key string, judge func(context.Context) verdict) verdict {
	fs.mu.Lock()
	g := fs.groups[key]
	if g == nil {
		g = &flightGroup{}
		fs.groups[key] = g
	}
	var f *flight
	start := false
	switch {
	case g.running == nil:
		f = &flight{judge: judge, done: make(chan struct{})}
		g.running, start = f, true
	case g.next == nil:
		f = &flight{judge: judge, done: make(chan struct{})}
		g.next = f
	default:
		f = g.next
	}
	f.join(ctx)
	fs.mu.Unlock()
	if start {
		go fs.run(key, g, f)
	}
	select {
	case <-f.done:
		return f.v
	case <-ctx.Done():
		return verdict{err: context.Cause(ctx)}
	}
}

// join adds the deadline of a review's context to the flight's.
func (f *flight) join(ctx context.Context) {
	f.members++
	d, ok := ctx.Deadline()
	switch {
	case !ok:
		f.noDeadline = true
	case !f.hasDeadline || d.After(f.deadline):
		f.deadline, f.hasDeadline = d, true
	}
}

// run judges flight f of group g, then starts the flight that gathered
// meanwhile, if any.
func (fs *flights) run(key string, g *flightGroup, f *flight) {
	for f != nil {
		fs.mu.Lock()
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if f.hasDeadline && !f.noDeadline {
			ctx, cancel = context.WithDeadline(ctx, f.deadline)
		}
		fs.mu.Unlock()
		f.v = f.judge(ctx)
		cancel()
		close(f.done)

		fs.mu.Lock()
		f, g.running, g.next = g.next, g.next, nil
		if f == nil {
			delete(fs.groups, key)
		}
		fs.mu.Unlock()
	}
}

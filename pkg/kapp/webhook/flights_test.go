package webhook

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestFlightsNeverShareAnEarlierRead: reviews that arrive while a
// judgement of their key runs do not get its verdict (its reads started
// before they arrived): they share the next judgement, which starts after
// all of them arrived; other keys are judged on their own; a review whose
// context ends stops waiting.
func TestFlightsNeverShareAnEarlierRead(t *testing.T) {
	fs := newFlights()
	var mu sync.Mutex
	starts := map[string]time.Time{}
	release := make(chan struct{})
	calls := 0
	judge := func(ctx context.Context) verdict {
		mu.Lock()
		calls++
		n := strconv.Itoa(calls)
		starts[n] = time.Now()
		mu.Unlock()
		if n == "1" {
			<-release
		}
		return verdict{skip: n}
	}
	type result struct {
		arrived time.Time
		v       verdict
	}
	review := func(ctx context.Context, key string, out chan<- result) {
		arrived := time.Now()
		out <- result{arrived, fs.do(ctx, key, judge)}
	}
	members := func(key string) int {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		if g := fs.groups[key]; g != nil && g.next != nil {
			return g.next.members
		}
		return 0
	}
	first := make(chan result, 1)
	go review(context.Background(), "a", first)
	for started := false; !started; {
		mu.Lock()
		started = calls == 1
		mu.Unlock()
	}
	later := make(chan result, 3)
	for range 3 {
		go review(context.Background(), "a", later)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan result, 1)
	go review(cancelled, "a", gaveUp)
	for members("a") < 4 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if r := <-gaveUp; !errors.Is(r.v.err, context.Canceled) {
		t.Fatalf("a review whose context ended got %+v", r.v)
	}
	other := make(chan result, 1)
	go review(context.Background(), "b", other) // another key: judged on its own, now
	if r := <-other; r.v.skip != "2" {
		t.Fatalf("another key waited for the flight of a: judgement %s", r.v.skip)
	}
	close(release)
	if r := <-first; r.v.skip != "1" {
		t.Fatalf("the first review got judgement %s", r.v.skip)
	}
	for range 3 {
		r := <-later
		if r.v.skip != "3" {
			t.Fatalf("a review that arrived during judgement 1 got judgement %s", r.v.skip)
		}
		if mu.Lock(); !starts["3"].After(r.arrived) {
			t.Errorf("judgement 3 started at %v, before a review it answered arrived (%v)", starts["3"], r.arrived)
		}
		mu.Unlock()
	}
	if calls != 3 {
		t.Fatalf("%d judgements, want 3 (one for the three reviews that arrived together)", calls)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.groups) != 0 {
		t.Fatalf("%d groups left after every flight ended", len(fs.groups))
	}
}

// TestFlightsDeadline: a flight's judgement runs until the latest deadline
// of its reviews.
func TestFlightsDeadline(t *testing.T) {
	fs := newFlights()
	block := make(chan struct{})
	got := make(chan time.Time, 1)
	first := make(chan verdict, 1)
	go func() {
		first <- fs.do(context.Background(), "k", func(context.Context) verdict { <-block; return verdict{} })
	}()
	for {
		fs.mu.Lock()
		running := fs.groups["k"] != nil
		fs.mu.Unlock()
		if running {
			break
		}
		time.Sleep(time.Millisecond)
	}
	late := time.Now().Add(time.Hour)
	var wg sync.WaitGroup
	for _, d := range []time.Time{time.Now().Add(time.Minute), late} {
		ctx, cancel := context.WithDeadline(context.Background(), d)
		defer cancel()
		wg.Add(1)
		go func() {
			defer wg.Done()
			fs.do(ctx, "k", func(ctx context.Context) verdict {
				dl, _ := ctx.Deadline()
				got <- dl
				return verdict{}
			})
		}()
	}
	for {
		fs.mu.Lock()
		n := fs.groups["k"].next
		joined := n != nil && n.members == 2
		fs.mu.Unlock()
		if joined {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(block)
	<-first
	if dl := <-got; !dl.Equal(late) {
		t.Fatalf("the flight's deadline is %v, want the latest of its reviews' %v", dl, late)
	}
	wg.Wait()
}

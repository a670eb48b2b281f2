package reload

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// source is a loader over a version number and an injectable failure.
type source struct {
	mu      sync.Mutex
	version int
	err     error
	loads   int
}

func (s *source) set(version int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version, s.err = version, err
}

func (s *source) load(_ context.Context, prev *int) (*int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	if s.err != nil {
		return nil, s.err
	}
	if prev != nil && *prev == s.version {
		return prev, nil
	}
	v := s.version
	return &v, nil
}

func TestFirstFailureIsFatal(t *testing.T) {
	src := &source{err: errors.New("no file")}
	if v, err := Start(context.Background(), src.load); err == nil || v != nil {
		t.Fatalf("Start over a failing source = %v, %v; want an error", v, err)
	}
}

func TestFirstLoadMustGiveAValue(t *testing.T) {
	none := func(context.Context, *int) (*int, error) { return nil, nil }
	if v, err := Start(context.Background(), none); err == nil || v != nil {
		t.Fatalf("Start over a loader giving nothing = %v, %v; want an error", v, err)
	}
}

func TestLaterFailureKeepsLastGoodValue(t *testing.T) {
	ctx := context.Background()
	src := &source{version: 1}
	v, err := Start(ctx, src.load)
	if err != nil || *v.Get() != 1 {
		t.Fatalf("start: %v %v", v, err)
	}
	src.set(2, errors.New("torn file"))
	if changed, err := v.Reload(ctx); err == nil || changed || *v.Get() != 1 {
		t.Fatalf("failed reload: changed %v, err %v, value %d; want the error and value 1", changed, err, *v.Get())
	}
	src.set(2, nil)
	if changed, err := v.Reload(ctx); err != nil || !changed || *v.Get() != 2 {
		t.Fatalf("reload: changed %v, err %v, value %d", changed, err, *v.Get())
	}
	before := v.Get()
	if changed, err := v.Reload(ctx); err != nil || changed || v.Get() != before {
		t.Fatalf("unchanged source: changed %v, err %v, swapped %v", changed, err, v.Get() != before)
	}
}

// Watch swaps new values in while readers read (run with -race), reports
// failures and changes, and stops with its context.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	src := &source{version: 1}
	v, err := Start(ctx, src.load)
	if err != nil {
		t.Fatal(err)
	}
	var failures, changes atomic.Int32
	done := make(chan struct{})
	go func() {
		v.Watch(ctx, time.Millisecond, func(error) { failures.Add(1) }, func(n *int) { changes.Add(1) })
		close(done)
	}()
	readers := sync.WaitGroup{}
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			last := 0
			for ctx.Err() == nil {
				n := *v.Get()
				if n < last {
					t.Errorf("a reader saw version %d after %d", n, last)
					return
				}
				last = n
			}
		}()
	}
	src.set(2, errors.New("down"))
	waitFor(t, func() bool { return failures.Load() > 0 })
	if *v.Get() != 1 {
		t.Fatalf("value during failures = %d, want 1", *v.Get())
	}
	src.set(3, nil)
	waitFor(t, func() bool { return *v.Get() == 3 })
	if changes.Load() != 1 {
		t.Errorf("changes reported = %d, want 1", changes.Load())
	}
	cancel()
	<-done
	readers.Wait()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

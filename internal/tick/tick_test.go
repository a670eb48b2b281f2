package tick

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every goes on after a failure (each reported), stops when its context
// ends, and drops the error of a run the shutdown cut short.
func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int32
	var reported []error
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		Every(ctx, time.Millisecond, func(ctx context.Context) error {
			switch n := runs.Add(1); {
			case n <= 2:
				return errors.New("store down")
			case n == 5:
				cancel() // the shutdown arrives during this run
				return ctx.Err()
			}
			return nil
		}, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, err)
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Every did not stop when its context ended")
	}
	if n := runs.Load(); n != 5 {
		t.Errorf("runs = %d, want 5 (going on after failures, stopping at the shutdown)", n)
	}
	if len(reported) != 2 {
		t.Errorf("reported %v, want the two store failures only", reported)
	}
}

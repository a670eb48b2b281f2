// Package reload is the one reload loop of the service and the reloaded
// value it drives. Every runs a load on an interval until the context ends
// and reports each failure without stopping: the key file (access.Keyring),
// the edge's snapshot poll and the usage export all run on it. Value is a
// value reloaded that way: the first load happens at start and its failure
// is fatal (returned to the caller, who refuses to start); a later failure is
// reported and the last good value kept; a load that finds its source
// unchanged returns the value it had and nothing is swapped; a new value is
// swapped in atomically, so a reader sees the old value or the new one and
// never half of either. The keyring is a Value. The edge's served snapshot
// follows the same rules but its swap is the view's (view.Current: live
// batches swap it too, and a swap rebases their changes onto the new
// snapshot), and its first load falls back to the local cache; the usage
// export holds no value, only its retries.
package reload

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Every calls fn every interval until ctx ends; no call starts after it
// ended. An error of fn is passed to failed (log it, count it) and the loop
// goes on; an error after ctx ended is the shutdown's and is dropped.
func Every(ctx context.Context, every time.Duration, fn func(context.Context) error, failed func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ctx.Err() != nil {
				return // both were ready: the shutdown wins, no run starts after it
			}
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				failed(err)
			}
		}
	}
}

// Loader loads a value. prev is the value served now (nil at start); a
// loader that finds its source unchanged returns prev itself, and no swap
// happens.
type Loader[T any] func(ctx context.Context, prev *T) (*T, error)

// Value is a reloaded value. Get is safe for any number of goroutines;
// loads are serialised.
type Value[T any] struct {
	load Loader[T]
	cur  atomic.Pointer[T]
	mu   sync.Mutex
}

// Start loads the first value; its error is returned (fatal at start), as
// is a loader that gives no value.
func Start[T any](ctx context.Context, load Loader[T]) (*Value[T], error) {
	v := &Value[T]{load: load}
	if _, err := v.Reload(ctx); err != nil {
		return nil, err
	}
	if v.Get() == nil {
		return nil, errors.New("reload: the first load gave no value")
	}
	return v, nil
}

// Get returns the current value.
func (v *Value[T]) Get() *T { return v.cur.Load() }

// Reload loads once and reports whether the value changed. On an error the
// current value stays.
func (v *Value[T]) Reload(ctx context.Context) (changed bool, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	prev := v.cur.Load()
	next, err := v.load(ctx, prev)
	if err != nil {
		return false, err
	}
	if next == prev || next == nil {
		return false, nil
	}
	v.cur.Store(next)
	return true, nil
}

// Watch reloads every interval until ctx ends: failed receives each
// failure (the last good value keeps serving), changed each new value
// (nil: not told).
func (v *Value[T]) Watch(ctx context.Context, every time.Duration, failed func(error), changed func(*T)) {
	Every(ctx, every, func(ctx context.Context) error {
		ok, err := v.Reload(ctx)
		if ok && changed != nil {
			changed(v.Get())
		}
		return err
	}, failed)
}

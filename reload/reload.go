// Package reload is a value reloaded from its source (Value): the first
// load happens at start and its failure is fatal (returned to the caller,
// who refuses to start); a later failure is reported and the last good
// value kept; a load that finds its source unchanged returns the value it
// had and nothing is swapped; a new value is swapped in atomically, so a
// reader sees the old value or the new one and never half of either. Watch
// reloads it on an interval (package tick). The keyring (access.Keyring) is
// a Value, and so is the edge's served snapshot (package snapshot, which
// swaps each new one into the view the edge serves).
package reload

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eodata/eo/internal/tick"
)

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

// New returns a value that load loads, with none loaded yet (Get is nil
// until a Reload succeeds).
func New[T any](load Loader[T]) *Value[T] { return &Value[T]{load: load} }

// Start loads the first value; its error is returned (fatal at start), as
// is a loader that gives no value.
func Start[T any](ctx context.Context, load Loader[T]) (*Value[T], error) {
	v := New(load)
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
	tick.Every(ctx, every, func(ctx context.Context) error {
		ok, err := v.Reload(ctx)
		if ok && changed != nil {
			changed(v.Get())
		}
		return err
	}, failed)
}

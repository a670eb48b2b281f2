package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// breaker is the Redis backend's circuit breaker: after `threshold`
// consecutive failed calls it opens and calls fail at once with
// ErrUnavailable; only a successful probe (PING) closes it again. A hung
// server thus costs the first few requests one bounded timeout each, and
// the rest nothing.
type breaker struct {
	threshold int
	log       *slog.Logger
	isOpen    atomic.Bool
	health    *healthState

	mu    sync.Mutex
	fails int
	// opened counts the times the breaker opened (a metric).
	opened atomic.Uint64
	// failures counts failed calls and probes (a metric).
	failures atomic.Uint64
}

func newBreaker(threshold int, log *slog.Logger) *breaker {
	return &breaker{threshold: threshold, log: log, health: newHealthState(true)}
}

// allow returns nil when a call may be attempted, else the error to fail it
// with.
func (b *breaker) allow() error {
	if !b.isOpen.Load() {
		return nil
	}
	h := b.health.get()
	return fmt.Errorf("%w since %s: %s", ErrUnavailable, h.Since.Format(time.RFC3339), h.Error)
}

// isFailure tells a failed call from a result: redis.Nil is an answer, and
// a caller that gave up (its context cancelled) says nothing of the server.
func isFailure(err error) bool {
	return err != nil && !errors.Is(err, redis.Nil) && !errors.Is(err, context.Canceled)
}

// observe records a call's outcome.
func (b *breaker) observe(err error) {
	if !isFailure(err) {
		if err == nil || errors.Is(err, redis.Nil) {
			b.mu.Lock()
			b.fails = 0
			b.mu.Unlock()
		}
		return
	}
	b.failures.Add(1)
	b.mu.Lock()
	b.fails++
	trip := b.fails >= b.threshold && !b.isOpen.Load()
	if trip {
		b.isOpen.Store(true)
	}
	b.mu.Unlock()
	if !trip {
		if b.isOpen.Load() {
			b.health.set(err) // the latest error, for /ready
		}
		return
	}
	{
		b.opened.Add(1)
		b.health.set(err)
		b.log.Error("redis unreachable: metered requests fail fast with 503 until a probe reaches it again",
			"err", err, "consecutive_failures", b.threshold)
	}
}

// probed records a probe's outcome: a success closes the breaker.
func (b *breaker) probed(err error) {
	if isFailure(err) {
		b.observe(err)
		return
	}
	b.mu.Lock()
	b.fails = 0
	wasOpen := b.isOpen.Swap(false)
	b.mu.Unlock()
	if wasOpen {
		down := time.Since(b.health.get().Since).Round(time.Millisecond)
		b.health.set(nil)
		b.log.Info("redis reachable again: metering resumed", "down_for", down.String())
	}
}

// open opens the breaker at once, with err as the reason (a client started
// while the server did not answer: RedisOptions.StartDown).
func (b *breaker) open(err error) {
	b.mu.Lock()
	b.fails = b.threshold
	was := b.isOpen.Swap(true)
	b.mu.Unlock()
	b.health.set(err)
	if !was {
		b.opened.Add(1)
		b.log.Error("redis unreachable at start: metered requests fail fast with 503 until a probe reaches it", "err", err)
	}
}

package access

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrUnavailable is returned, wrapped, while a counters backend is known to
// be unreachable (the Redis circuit breaker is open): the call was not
// attempted. The edge answers 503 with Retry-After.
var ErrUnavailable = errors.New("access: counters backend unavailable")

// ErrUsageFull is returned, wrapped, by Record when the event was dropped
// because the retained-event cap is reached (usage export has been failing
// for long) or the in-memory buffer is full. The backend counts the drops
// (UsageStats.Dropped) and logs them at most every few seconds, so the
// caller need not log each one.
var ErrUsageFull = errors.New("access: usage event dropped: too many events waiting for export")

// Health is a backend's state for the edge's /ready.
type Health struct {
	OK bool
	// Required: the edge cannot serve metered requests without the backend
	// (Redis); a failing backend that is not required leaves the edge
	// serving, degraded (the embedded store counts in memory while its
	// file cannot be written).
	Required bool
	Error    string    // the last failure, when !OK
	Since    time.Time // when the backend entered its current state
}

// HealthReporter is implemented by backends that know their health without
// a call (cached state: cheap enough for every /ready request).
type HealthReporter interface {
	Health() Health
}

// UsageStats describe the usage events a backend holds.
type UsageStats struct {
	// Retained is the events not yet exported (and pruned): written plus
	// buffered in memory. For Redis, the stream's length as last seen plus
	// this instance's buffer.
	Retained int64
	// Cap is the retained-event cap (0: none).
	Cap int64
	// Dropped counts events dropped since start because the cap or the
	// buffer was full.
	Dropped uint64
}

// StatsReporter is implemented by backends that report UsageStats.
type StatsReporter interface {
	UsageStats() UsageStats
}

// healthState is a backend's cached health.
type healthState struct {
	mu       sync.Mutex
	ok       bool
	required bool
	err      string
	since    time.Time
}

func newHealthState(required bool) *healthState {
	return &healthState{ok: true, required: required, since: time.Now().UTC()}
}

// set records the outcome of an operation; it reports whether the state
// changed (ok to failing or back).
func (h *healthState) set(err error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ok := err == nil
	if err != nil {
		h.err = err.Error()
	}
	if ok == h.ok {
		return false
	}
	h.ok = ok
	h.since = time.Now().UTC()
	if ok {
		h.err = ""
	}
	return true
}

func (h *healthState) get() Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Health{OK: h.ok, Required: h.required, Error: h.err, Since: h.since}
}

// every rate-limits a log line: ok returns true at most once per interval.
type every struct {
	d    time.Duration
	last atomic.Int64
}

func (e *every) ok() bool {
	now := time.Now().UnixNano()
	last := e.last.Load()
	if last != 0 && now-last < int64(e.d) {
		return false
	}
	return e.last.CompareAndSwap(last, now)
}

// comparePos orders two usage positions of one source: the embedded
// backend's sequence numbers ("42") and Redis stream ids ("1714000000000-3")
// both compare as (number, number) pairs; "" is before everything.
func comparePos(a, b string) int {
	if a == b {
		return 0
	}
	if a == "" {
		return -1
	}
	if b == "" {
		return 1
	}
	a1, a2 := splitPos(a)
	b1, b2 := splitPos(b)
	switch {
	case a1 < b1:
		return -1
	case a1 > b1:
		return 1
	case a2 < b2:
		return -1
	case a2 > b2:
		return 1
	}
	return 0
}

func splitPos(p string) (uint64, uint64) {
	hi, lo, _ := strings.Cut(p, "-")
	x, _ := strconv.ParseUint(hi, 10, 64)
	y, _ := strconv.ParseUint(lo, 10, 64)
	return x, y
}

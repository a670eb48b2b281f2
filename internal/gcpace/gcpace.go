// Package gcpace lets the garbage collector run less often while
// background work that makes a lot of garbage (a snapshot loading beside the
// one served, a usage export) runs beside the goroutines serving requests.
//
// Each collector cycle takes a quarter of the processors for its marking,
// plus assists from the goroutines that allocate, which are the ones
// serving requests: on a small heap, background garbage starts a cycle
// every few hundred milliseconds, and each shows in the requests' p99. The
// soft memory limit (GOMEMLIMIT) still bounds the heap while relaxed.
package gcpace

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Percent is GOGC while relaxed, and Headroom the most heap beyond the live
// heap that a relaxation lets the collector wait for: GOGC 400 on a 2 GB
// heap (100,000 matches) would let it grow by 8 GB before a cycle.
const (
	Percent  = 400
	Headroom = 4 << 30
)

// relaxed is GOGC while relaxed on a live heap of `live` bytes, from a
// setting of `current`: Percent, less on a heap so large that Percent
// would mean more than Headroom of garbage, never below current.
func relaxed(live uint64, current int) int {
	p := Percent
	if live > 0 && Headroom*100/live < uint64(p) {
		p = int(Headroom * 100 / live)
	}
	return max(p, current)
}

// liveHeap is the heap the last collection left live (0 before the first).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

var (
	mu      sync.Mutex
	holders int
	saved   int
)

// Relax sets GOGC to Percent (less on a large heap: Headroom) until the
// returned function is called, unless it is already higher or off. Calls
// may overlap (a swap during an export): the setting in force before the
// first is restored after the last.
func Relax() (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	if holders == 0 {
		saved = debug.SetGCPercent(-1)
		if saved < 0 {
			debug.SetGCPercent(saved)
		} else {
			debug.SetGCPercent(relaxed(liveHeap(), saved))
		}
	}
	holders++
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if holders--; holders == 0 {
				debug.SetGCPercent(saved)
			}
		})
	}
}

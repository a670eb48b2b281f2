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
	"sync"
)

// Percent is GOGC while relaxed.
const Percent = 400

var (
	mu      sync.Mutex
	holders int
	saved   int
)

// Relax sets GOGC to Percent until the returned function is called, unless
// it is already higher or off. Calls may overlap (a swap during an export):
// the setting in force before the first is restored after the last.
func Relax() (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	if holders == 0 {
		saved = debug.SetGCPercent(Percent)
		if saved < 0 || saved > Percent {
			debug.SetGCPercent(saved)
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

// Package proctest holds what the fault and load tests share: what the
// server helpers (MinIO, redis-server) need of the processes they control,
// a buffer for the output of a process or logger, goroutines that keep
// the code under test busy (Hammer), a TCP proxy for network faults
// (Proxy: a slow link, a silent one), a wait for a condition (Within), and
// the values of Prometheus metrics (MetricValue, Values).
package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WaitStopped returns once every thread of process pid is stopped (or the
// process is gone), or an error after limit. SIGSTOP is delivered
// asynchronously: a thread running on another core can finish the request
// it is serving after kill(2) returns, so a test that freezes a server and
// at once expects its calls to hang must wait for the stop to take hold.
func WaitStopped(pid int, limit time.Duration) error {
	var running int
	var err error
	if Within(limit, 5*time.Millisecond, func() bool {
		running, err = runningThreads(pid)
		return err == nil && running == 0
	}) {
		return nil
	}
	return fmt.Errorf("proctest: process %d not stopped after %v (%d threads running, %v)", pid, limit, running, err)
}

// Within calls cond every poll until it returns true and says whether it
// did before limit ran out; cond is called once more after the limit.
// Tests wait through it for what another goroutine or process does.
func Within(limit, poll time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(poll)
	}
	return true
}

// runningThreads counts the threads of pid whose state is neither stopped
// (T, t) nor dead (Z, X). A process that is gone has none.
func runningThreads(pid int) (int, error) {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended between the glob and the read
		}
		// "tid (comm) S ...": comm may hold spaces and parentheses, so
		// the state is the first field after the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) {
			return 0, fmt.Errorf("proctest: unreadable %s", f)
		}
		switch s[i+2] {
		case 'T', 't', 'Z', 'X':
		default:
			n++
		}
	}
	return n, nil
}

package edge

import (
	"sync"
	"time"
)

// loadState is what the edge knows of its store and of the snapshots it
// could not serve, for /health and the logs. The reload loop writes it;
// /health reads it (never calling the store itself).
type loadState struct {
	mu          sync.Mutex
	storeErr    error     // the last store failure, nil once a call succeeds again
	storeSince  time.Time // when the store started failing
	storeLastOK time.Time
	rejectedID  string // the newest snapshot rejected as corrupt
	rejectedErr error
}

func (l *loadState) storeFailed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.storeErr == nil {
		l.storeSince = time.Now()
	}
	l.storeErr = err
}

func (l *loadState) storeOK() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.storeErr, l.storeLastOK = nil, time.Now()
}

func (l *loadState) reject(id string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rejectedID, l.rejectedErr = id, err
}

func (l *loadState) rejected() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rejectedID, l.rejectedErr
}

// store returns since when the store has failed, when a call last
// succeeded, and its failure (nil: reachable at the last call).
func (l *loadState) store() (since, lastOK time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.storeSince, l.storeLastOK, l.storeErr
}

package edge

import (
	"sync"
	"time"
)

// loadState is what the edge knows of its store and of the snapshots it
// could not serve, for /ready and the logs. The reload loop writes it;
// /ready reads it (never calling the store itself).
type loadState struct {
	mu          sync.Mutex
	storeErr    error     // the last store failure, nil once a call succeeds again
	storeSince  time.Time // when the store started failing
	storeLastOK time.Time
	rejectedID  string // the newest snapshot rejected as corrupt
	rejectedErr error
	servedID    string // the snapshot served, and since when
	servedSince time.Time
}

func (l *loadState) served(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != l.servedID {
		l.servedID, l.servedSince = id, time.Now()
	}
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
	if l.storeErr != nil {
		l.storeSince = time.Now()
	}
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

// snapshotCheck is /ready's "snapshot": required, ok once a snapshot is
// served; since is when the served one was swapped in.
func (l *loadState) snapshotCheck() Check {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.servedID == "" {
		e := "no snapshot loaded yet"
		return Check{Required: true, Error: &e, Since: time.Now().UTC().Format(time.RFC3339)}
	}
	return Check{OK: true, Required: true, Since: l.servedSince.UTC().Format(time.RFC3339)}
}

// storeCheck is /ready's "store": not required (the edge serves the
// snapshot it holds); failing while the store cannot be read, while the
// served snapshot came from the local cache because of that, or while the
// newest published snapshot is rejected as corrupt.
func (l *loadState) storeCheck(fromCache bool) Check {
	l.mu.Lock()
	defer l.mu.Unlock()
	since := l.storeSince
	var msg string
	switch {
	case l.storeErr != nil:
		msg = "store unreachable: " + l.storeErr.Error()
	case l.rejectedID != "" && l.rejectedID != l.servedID:
		msg = "the newest snapshot " + l.rejectedID + " is rejected (" + l.rejectedErr.Error() + "); serving " + l.servedID
	case fromCache:
		msg = "serving " + l.servedID + " from the local cache"
	}
	if since.IsZero() {
		since = time.Now()
	}
	c := Check{OK: msg == "", Since: since.UTC().Format(time.RFC3339)}
	if msg != "" {
		c.Error = &msg
	}
	return c
}

package snapshot

import (
	"sync"
	"time"
)

// state is what the keeper knows of its store and of the snapshots it
// could not serve, for /ready and the logs. The reloads write it; /ready
// reads it (never calling the store itself).
type state struct {
	mu         sync.Mutex
	storeErr   error            // the last store failure, nil once a call succeeds again
	storeSince time.Time        // when the store started or stopped failing
	rejected   map[string]error // the snapshots rejected (at most maxRejected)
	// The newest snapshot rejected and when it was created; the snapshot
	// served, when it was created and since when it is served.
	rejectedID            string
	rejectedAt            time.Time
	servedID              string
	servedAt, servedSince time.Time
}

// maxRejected bounds the rejected snapshots remembered (each is one id).
const maxRejected = 64

func (l *state) served(id string, created time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != l.servedID {
		l.servedID, l.servedAt, l.servedSince = id, created, time.Now()
	}
}

func (l *state) storeFailed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.storeErr == nil {
		l.storeSince = time.Now()
	}
	l.storeErr = err
}

func (l *state) storeOK() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.storeErr != nil {
		l.storeSince = time.Now()
	}
	l.storeErr = nil
}

func (l *state) reject(id string, created time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rejected == nil || len(l.rejected) >= maxRejected {
		l.rejected = map[string]error{}
	}
	l.rejected[id] = err
	if l.rejectedID == "" || created.After(l.rejectedAt) {
		l.rejectedID, l.rejectedAt = id, created
	}
}

func (l *state) isRejected(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.rejected[id]
	return ok
}

// SnapshotState is /ready's "snapshot": "" once a snapshot is served,
// since it was swapped in; else why not.
func (k *Keeper) SnapshotState() (problem string, since time.Time) {
	l := &k.state
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.servedID == "" {
		return "no snapshot loaded yet", time.Now()
	}
	return "", l.servedSince
}

// StoreState is /ready's "store": a problem while the store cannot be
// read, while the snapshot served came from the local cache because of
// that, or while the newest snapshot published is rejected.
func (k *Keeper) StoreState() (problem string, since time.Time) {
	l := &k.state
	l.mu.Lock()
	defer l.mu.Unlock()
	since = l.storeSince
	if since.IsZero() {
		since = time.Now()
	}
	switch {
	case l.storeErr != nil && k.fromCache.Load():
		return "store unreachable: " + l.storeErr.Error() + "; serving " + l.servedID + " from the local cache", since
	case l.storeErr != nil:
		return "store unreachable: " + l.storeErr.Error(), since
	case l.rejectedID != "" && l.rejectedAt.After(l.servedAt):
		return "the newest snapshot " + l.rejectedID + " is rejected (" + l.rejected[l.rejectedID].Error() + "); serving " + l.servedID, since
	case k.fromCache.Load():
		return "serving " + l.servedID + " from the local cache", since
	}
	return "", since
}

package push

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eodata/eo/live"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// Changes are the live path's changes on this edge, for the changes
// feed: the matches and odds each applied batch changed, at the batch's
// feed position (Event.Seq, shared by every instance of one feed). Only an
// entity's latest change is kept (an earlier one is superseded: the client
// fetches the entity once, as it is now), so the log holds at most two
// entries a match and needs no trimming; entries of matches a new snapshot
// no longer has are dropped at the swap (its change log says deleted).
//
// A cursor's feed position older than this edge's first change (another
// instance's, or one from before a restart) reads this edge's changes
// after it: changes this edge did not apply are not in what it serves
// either, and reach it by the next snapshot (announced by its change log)
// or the next event of the match.
type Changes struct {
	mu      sync.RWMutex
	entries []Change // ascending (seq, key); dead ones superseded
	index   map[ChangeKey]int
	dead    int
	last    uint64       // the feed position of the newest change recorded
	size    atomic.Int64 // live entries, for /metrics
}

// ChangeKey is a live change's entity: a match, or a match's odds.
type ChangeKey struct {
	Type uint8 // KeyMatch, KeyOdds; KeyAll in a position: past every change of its seq
	ID   tables.ID
}

// The entity types of a ChangeKey.
const (
	KeyMatch uint8 = 1
	KeyOdds  uint8 = 2
	// KeyAll, in a position, is past every change of its seq.
	KeyAll uint8 = 0xff
)

func (k ChangeKey) less(o ChangeKey) bool {
	if k.Type != o.Type {
		return k.Type < o.Type
	}
	return bytes.Compare(k.ID[:], o.ID[:]) < 0
}

type Change struct {
	Seq  uint64
	Key  ChangeKey
	At   time.Time
	dead bool
}

// after reports whether e comes after position (seq, key).
func (e *Change) after(seq uint64, key ChangeKey) bool {
	return e.Seq > seq || e.Seq == seq && key.less(e.Key)
}

func newChanges() *Changes { return &Changes{index: map[ChangeKey]int{}} }

// record holds a batch's changes (each at the feed position of the event
// that made it, all after the previous batch's) and the batch's position
// seq (called under the view's writers' lock, after the batch's view is
// served: a client that reads the change fetches that view or a newer one).
func (l *Changes) record(seq uint64, at time.Time, changes []Change) {
	if len(changes) == 0 {
		return
	}
	changes = slices.Clone(changes)
	slices.SortFunc(changes, func(a, b Change) int {
		switch {
		case a.Key.less(b.Key):
			return -1
		case b.Key.less(a.Key):
			return 1
		}
		return cmpU64(b.Seq, a.Seq) // a key's latest first
	})
	changes = slices.CompactFunc(changes, func(a, b Change) bool { return a.Key == b.Key })
	slices.SortFunc(changes, func(a, b Change) int {
		if a.Seq != b.Seq {
			return cmpU64(a.Seq, b.Seq)
		}
		if a.Key.less(b.Key) {
			return -1
		}
		return 1
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq < l.last {
		// The feed's numbering restarted: positions before it mean
		// nothing now (a client's cursor ahead of them reads the changes
		// once the numbering passes it; snapshots heal the rest).
		l.entries, l.index, l.dead = nil, map[ChangeKey]int{}, 0
		l.size.Store(0)
	}
	l.last = seq
	start := len(l.entries)
	for _, c := range changes {
		if i, ok := l.index[c.Key]; ok {
			l.entries[i].dead = true
			l.dead++
			l.size.Add(-1)
		}
		l.index[c.Key] = len(l.entries)
		l.entries = append(l.entries, Change{Seq: c.Seq, Key: c.Key, At: at})
		l.size.Add(1)
	}
	// Entries recorded at the same position before (none from the
	// tracker: every batch moves the position) stay in key order.
	if start > 0 && !l.entries[start].after(l.entries[start-1].Seq, l.entries[start-1].Key) {
		l.compact(true)
	} else if l.dead > 1024 && l.dead > len(l.entries)/2 {
		l.compact(false)
	}
}

// compact drops the dead entries (and, with sortAll, puts the entries back
// in (seq, key) order); under the writers' lock.
func (l *Changes) compact(sortAll bool) {
	out := l.entries[:0]
	for _, e := range l.entries {
		if !e.dead {
			out = append(out, e)
		}
	}
	clear(l.entries[len(out):])
	l.entries, l.dead = out, 0
	if sortAll {
		slices.SortStableFunc(l.entries, func(a, b Change) int {
			switch {
			case a.Seq != b.Seq:
				return cmpU64(a.Seq, b.Seq)
			case a.Key.less(b.Key):
				return -1
			case b.Key.less(a.Key):
				return 1
			}
			return 0
		})
	}
	for i, e := range l.entries {
		l.index[e.Key] = i
	}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// drop forgets the changes of matches keep rejects (at a snapshot swap:
// the matches the new snapshot does not have).
func (l *Changes) drop(keep func(id tables.ID) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for i := range l.entries {
		if e := &l.entries[i]; !e.dead && !keep(e.Key.ID) {
			e.dead = true
			delete(l.index, e.Key)
			n++
		}
	}
	if n > 0 {
		l.dead += n
		l.size.Add(-int64(n))
		l.compact(false)
	}
}

// Head is the feed position of the newest change recorded, and the number
// of changes held.
func (l *Changes) Head() (uint64, int) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.last, len(l.entries) - l.dead
}

// After returns up to limit changes after position (seq, key), oldest
// first, whether more follow, and the position after the last returned
// (past every change held when none follow; never behind the one given).
func (l *Changes) After(seq uint64, key ChangeKey, limit int) (out []Change, more bool, nseq uint64, nkey ChangeKey) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	i, _ := slices.BinarySearchFunc(l.entries, struct{}{}, func(e Change, _ struct{}) int {
		if e.after(seq, key) {
			return 1
		}
		return -1
	})
	nseq, nkey = seq, key
	for ; i < len(l.entries); i++ {
		e := l.entries[i]
		if e.dead {
			continue
		}
		if len(out) == limit {
			return out, true, nseq, nkey
		}
		out = append(out, e)
		nseq, nkey = e.Seq, e.Key
	}
	// Every change held is returned: the next page starts after them all,
	// unless the cursor was ahead (another instance further in the feed).
	if end := (Change{Seq: l.last, Key: ChangeKey{Type: KeyAll}}); end.after(nseq, nkey) {
		nseq, nkey = l.last, end.Key
	}
	return out, false, nseq, nkey
}

// recordChanges holds what a live batch changed for the changes feed: the
// matches whose row or maps changed and those with new odds lines.
//
// Each is recorded at the position of the event that made it (a match's
// last score event, its odds' last price event; EventSeq), not at the
// batch's: instances of one feed batch it differently, and a cursor
// started on one continues on another.
func (p *Push) recordChanges(seq uint64, ap view.Applied) {
	changes := make([]Change, 0, len(ap.Matches)+len(ap.Odds))
	at := func(id tables.ID, kinds ...string) uint64 {
		for _, k := range kinds {
			if s := p.tracker.EventSeq(id, k); s > 0 {
				return s
			}
		}
		return seq
	}
	for _, id := range ap.Matches {
		changes = append(changes, Change{Seq: at(id, live.KindScore, live.KindPrice), Key: ChangeKey{KeyMatch, id}})
	}
	for _, u := range ap.Odds {
		changes = append(changes, Change{Seq: at(u.Match, live.KindPrice), Key: ChangeKey{KeyOdds, u.Match}})
	}
	p.changes.record(seq, p.o.Now(), changes)
}

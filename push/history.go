package push

import (
	"sync/atomic"

	"github.com/eodata/eo/live"
)

// History holds the latest update frames of every target, numbered by feed
// position (Event.Seq), so that a WebSocket client that reconnects can be
// sent the updates it missed instead of a new snapshot. It holds the frames
// of every target that changed, subscribed on this instance or not: a
// client may resume on an instance it never used. Per target it holds the
// last Max frames.
//
// History is not safe for concurrent use (Stats excepted): the edge uses it
// under the view's writers' lock, so its order is the order of the views.
type History struct {
	max     int
	targets map[string]*ring
	// lastSwap is the position of the last snapshot swap: a target without
	// held frames may have been changed by it unseen.
	lastSwap uint64
	epoch    uint64
	// For /metrics (read while it changes).
	nTargets, nFrames, nBytes atomic.Int64
}

type histEntry struct {
	seq   uint64
	swap  bool // pushed by a snapshot swap: it repeats the seq before it
	frame []byte
}

// ring is one target's frames, oldest first from start.
type ring struct {
	// from is the lowest since_seq the frames held answer: a frame was
	// dropped at or before it, or the target had none held before.
	from  uint64
	e     []histEntry
	start int
}

// NewHistory returns a history that holds max frames per target (at least 1).
func NewHistory(n int) *History {
	return &History{max: max(n, 1), targets: map[string]*ring{}}
}

// Max is the number of frames held per target.
func (h *History) Max() int { return h.max }

// sync forgets everything when the feed's numbering restarted.
func (h *History) sync(at live.Position) {
	if at.Epoch == h.epoch {
		return
	}
	h.Drop(func(string) bool { return false })
	h.lastSwap, h.epoch = at.Horizon, at.Epoch
}

// Record holds frame, the update of target numbered seq (at.Seq, the
// position of the newest event applied); swap marks an update pushed by a
// snapshot swap. frame is kept: the caller must not modify it.
func (h *History) Record(target string, frame []byte, swap bool, at live.Position) {
	h.sync(at)
	r := h.targets[target]
	if r == nil {
		r = &ring{from: h.lastSwap + 1, e: make([]histEntry, 0, min(h.max, 8))}
		h.targets[target] = r
		h.nTargets.Add(1)
	}
	e := histEntry{seq: at.Seq, swap: swap, frame: frame}
	if len(r.e) < h.max {
		r.e = append(r.e, e)
		h.nFrames.Add(1)
		h.nBytes.Add(int64(len(frame)))
		return
	}
	old := r.e[r.start]
	h.nBytes.Add(int64(len(frame) - len(old.frame)))
	from := old.seq
	if old.swap {
		from++ // a client at old.seq may or may not have had the swap's update
	}
	r.from = max(r.from, from)
	r.e[r.start] = e
	r.start = (r.start + 1) % len(r.e)
}

// Swapped records a snapshot swap at position at.Seq, after the updates it
// pushed were recorded.
func (h *History) Swapped(at live.Position) {
	h.sync(at)
	h.lastSwap = at.Seq
}

// Since calls each with the frames of target numbered after n, oldest
// first, and reports true, when they are every update of target after n;
// else it calls nothing and reports false (the client needs a snapshot):
// n is ahead of at (the feed not applied that far here), before at's
// horizon (events may be missing), older than the frames held, the seq of
// a swap's update (the client may or may not have had it), or, for a target
// with no frame held, not after the last swap (it may have changed the
// target unseen).
func (h *History) Since(target string, n uint64, at live.Position, each func(frame []byte)) bool {
	h.sync(at)
	if n > at.Seq || n < at.Horizon {
		return false
	}
	r := h.targets[target]
	if r == nil {
		return n > h.lastSwap
	}
	if n < r.from {
		return false
	}
	for i := range r.e {
		if e := &r.e[(r.start+i)%len(r.e)]; e.seq == n && e.swap {
			return false
		}
	}
	for i := range r.e {
		if e := &r.e[(r.start+i)%len(r.e)]; e.seq > n {
			each(e.frame)
		}
	}
	return true
}

// Targets lists the targets with frames held.
func (h *History) Targets() []string {
	out := make([]string, 0, len(h.targets))
	for t := range h.targets {
		out = append(out, t)
	}
	return out
}

// Drop forgets the frames of every target keep rejects (a client resuming
// one of them then gets a snapshot: Since sees no frame held, and the
// drop happens at a swap).
func (h *History) Drop(keep func(target string) bool) {
	for t, r := range h.targets {
		if keep(t) {
			continue
		}
		for _, e := range r.e {
			h.nBytes.Add(-int64(len(e.frame)))
		}
		h.nFrames.Add(-int64(len(r.e)))
		h.nTargets.Add(-1)
		delete(h.targets, t)
	}
}

// HistoryStats are a history's sizes.
type HistoryStats struct {
	Targets, Frames, Bytes int64
}

// Stats reports the history's sizes; safe while it changes.
func (h *History) Stats() HistoryStats {
	return HistoryStats{Targets: h.nTargets.Load(), Frames: h.nFrames.Load(), Bytes: h.nBytes.Load()}
}

package edge

// The live path on the edge: a live.Tracker applies the feed to the served
// view (package view holds the live state), and every new view's changes are
// pushed to the WebSocket subscribers (ws.go) as update frames built from
// that view. A snapshot swap pushes the targets whose frame it changed. Both
// happen under the view's writers' lock, in view order, so a subscriber's
// frames follow the views REST serves.

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eodata/eo/live"
	"github.com/eodata/eo/push"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// LiveOptions configures the live path. Zero values take the defaults.
type LiveOptions struct {
	// Feed is the live event source (in-process, or Redis so that every
	// instance pushes every event). Nil: no live events; the WebSocket still
	// serves snapshots of the loaded data.
	Feed live.Feed
	// Tickets stores WebSocket tickets; share one (Redis) between instances
	// so a ticket minted on one is redeemable on another. Default in-memory.
	Tickets push.TicketStore
	// Limiter caps concurrent connections per key; share one (Redis) between
	// instances so the cap holds across them. Default in-memory.
	Limiter push.ConnLimiter
	// ConnLimits is the per-key connection cap per plan (default standard 5,
	// trial 5, internal 100); a plan not listed gets the standard cap.
	ConnLimits map[string]int
	// TicketTTL is a ticket's lifetime (default 60s).
	TicketTTL time.Duration
	// PingInterval is how often the server pings (default 20s).
	PingInterval time.Duration
	// PongTimeout closes a connection silent for longer (default 60s).
	PongTimeout time.Duration
	// WriteTimeout bounds one frame write (default 10s); a client that does
	// not drain its socket for that long is cut off as a slow consumer.
	WriteTimeout time.Duration
	// SendQueue is each connection's bounded queue of frames (default 256);
	// a full queue cuts the connection off as a slow consumer.
	SendQueue int
	// MaxSubscriptions per connection (default 1000).
	MaxSubscriptions int
	// ResumeBuffer is how many of its latest updates each target keeps for
	// clients that resume with since_seq (default 100; at most half the
	// send queue less two, so a replay always fits in a queue).
	ResumeBuffer int
}

func (o *LiveOptions) defaults(now func() time.Time) {
	if o.Tickets == nil {
		o.Tickets = push.NewMemoryTickets(now)
	}
	if o.Limiter == nil {
		o.Limiter = push.NewMemoryLimiter()
	}
	if o.ConnLimits == nil {
		o.ConnLimits = map[string]int{"standard": 5, "trial": 5, "internal": 100}
	}
	if o.TicketTTL <= 0 {
		o.TicketTTL = 60 * time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 20 * time.Second
	}
	if o.PongTimeout <= 0 {
		o.PongTimeout = 60 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.SendQueue <= 0 {
		o.SendQueue = 256
	}
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = 1000
	}
	if o.ResumeBuffer <= 0 {
		o.ResumeBuffer = 100
	}
	// waitRoom leaves half the queue free for the answers to one client
	// frame: the acknowledgement and a replay.
	o.ResumeBuffer = max(min(o.ResumeBuffer, o.SendQueue/2-2), 1)
}

type liveState struct {
	s       *Server
	o       LiveOptions
	hub     *push.Hub
	tracker *live.Tracker
	// hist holds every target's latest updates for resuming clients; used
	// under the view's writers' lock only (Stats excepted).
	hist *push.History
	// changes are the live changes the changes feed serves
	// (edge/changes_live.go).
	changes *liveChanges
	conns   atomic.Int64
	// open holds the open connections (*wsConn -> struct{}), for
	// closeInactive.
	open sync.Map
	// ws counts the WebSocket channel for /metrics (edge/ws.go).
	ws wsStats
}

func newLiveState(s *Server, o LiveOptions) *liveState {
	o.defaults(s.o.Now)
	l := &liveState{s: s, o: o, hub: push.NewHub(), hist: push.NewHistory(o.ResumeBuffer), changes: newLiveChanges()}
	l.tracker = live.NewTracker(&s.view, l.applied)
	return l
}

// LiveStats are counters of the live path.
type LiveStats struct {
	Connections   int64 // WebSocket connections open on this instance
	Events        int64 // feed events applied
	DroppedEvents int64 // events whose match the snapshot does not know
	// WithheldLines are live eo_market lines not served: they counted fewer
	// books than the snapshot's line of their series.
	WithheldLines  int64
	OverlayMatches int // matches with live state or lines newer than the snapshot
	// RejectedEvents are the score events (and finished maps) refused
	// because the pipeline would quarantine them, by reason
	// (live.RejectReasons).
	RejectedEvents map[string]int64
}

// LiveStats reports the live path's counters.
func (s *Server) LiveStats() LiveStats {
	st := s.live.tracker.Stats()
	n := 0
	if v := s.view.Load(); v != nil {
		n = v.LiveMatches()
	}
	return LiveStats{Connections: s.live.conns.Load(), Events: st.Events, DroppedEvents: st.Dropped, WithheldLines: st.Withheld, OverlayMatches: n,
		RejectedEvents: st.Rejected}
}

// RunLive consumes the configured feed until ctx ends (Start calls it). It
// returns once subscribed, so an event published afterwards is seen.
func (s *Server) RunLive(ctx context.Context) error {
	if s.live.o.Feed == nil || s.live.tracker.Running() {
		return nil
	}
	return s.live.tracker.Start(ctx, s.live.o.Feed)
}

// AttachFeed starts consuming f when the server was built without a feed
// (the embedded default creates its in-process feed once the edge runs).
func (s *Server) AttachFeed(ctx context.Context, f live.Feed) error {
	if s.live.tracker.Running() {
		return live.ErrRunning
	}
	s.live.o.Feed = f
	return s.RunLive(ctx)
}

// ReplaySource is the local replay's source of matches: the served view's
// live matches, then the next scheduled ones.
func (s *Server) ReplaySource() func(skip func(upstream string) bool) (live.ReplayMatch, bool) {
	return live.ReplaySource(&s.view)
}

// applied pushes a batch's updates and holds them for resuming clients
// (of every target the batch changed, subscribed here or not); called by the
// tracker under the view's writers' lock.
func (l *liveState) applied(v *view.View, ap view.Applied) {
	at := l.tracker.Position()
	l.recordChanges(at.Seq, ap)
	for _, id := range ap.Matches {
		target := "match:" + id.String()
		b := updateFrame(target, at.Seq, 2048)
		if b, ok := v.AppendMatchFrame(b, id); ok {
			l.pushUpdate(target, append(b, '}'), false, at)
		}
	}
	for _, u := range ap.Odds {
		target := "odds:" + u.Match.String()
		b := updateFrame(target, at.Seq, len(u.Lines))
		l.pushUpdate(target, append(append(b, u.Lines...), '}'), false, at)
	}
}

// swapped pushes, after a snapshot swap, an update to every target whose
// frame the new snapshot changed (new data landed, the live state folded
// into the snapshot), so subscribers hold what REST serves: the subscribed
// targets and those with updates held for resuming clients. Called under
// the view's writers' lock.
func (l *liveState) swapped(old, cur *view.View) {
	at := l.tracker.Position()
	if old != nil {
		targets := l.hub.Targets()
		for _, t := range l.hist.Targets() {
			if !l.hub.Has(t) {
				targets = append(targets, t)
			}
		}
		var a, b []byte
		for _, target := range targets {
			kind, rest, _ := strings.Cut(target, ":")
			id, _ := tables.ParseID(rest)
			var okA, okB bool
			if kind == "match" {
				a, okA = old.AppendMatchFrame(a[:0], id)
				b, okB = cur.AppendMatchFrame(b[:0], id)
			} else {
				a, okA = old.AppendOddsFrame(a[:0], id)
				b, okB = cur.AppendOddsFrame(b[:0], id)
			}
			if okB && (!okA || !bytes.Equal(a, b)) {
				f := append(updateFrame(target, at.Seq, len(b)), b...)
				l.pushUpdate(target, append(f, '}'), true, at)
			}
		}
	}
	// Updates of closed or unknown matches nobody listens to here are
	// forgotten (no more will come; a resuming client gets a snapshot).
	l.hist.Drop(func(target string) bool {
		if l.hub.Has(target) {
			return true
		}
		_, rest, _ := strings.Cut(target, ":")
		id, _ := tables.ParseID(rest)
		m, ok := cur.Match(id)
		return ok && m.Status != "completed" && m.Status != "cancelled"
	})
	l.hist.Swapped(at)
	l.changes.drop(func(id tables.ID) bool { _, ok := cur.Match(id); return ok })
	l.tracker.Rebased(cur)
}

// updateFrame starts an update frame of target numbered seq, to be
// completed with the data and '}'.
func updateFrame(target string, seq uint64, data int) []byte {
	b := make([]byte, 0, data+len(target)+64)
	b = append(b, `{"type":"update","target":"`...)
	b = append(b, target...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, `,"data":`...)
}

// pushUpdate holds an update frame for resuming clients and pushes it to
// the target's subscribers.
func (l *liveState) pushUpdate(target string, frame []byte, swap bool, at live.Position) {
	l.hist.Record(target, frame, swap, at)
	l.hub.Broadcast(target, frame)
}

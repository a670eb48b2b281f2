// Package push is the live path's push side, which the edge mounts: the
// tracker that applies the live feed to the served view (package live),
// the update frames each change makes, their fan-out to the WebSocket
// connections subscribed (Hub), the latest updates held for clients that
// resume (History), the live changes the changes feed serves (Changes),
// the WebSocket tickets and per-key connection caps (in memory or shared
// through Redis), and each connection's reader and writer once the edge
// has authenticated and upgraded it. A live event goes from the tracker
// to the connections without leaving the package.
package push

// The live path's push side: a live.Tracker applies the feed to the served
// view (package view holds the live state), and every new view's changes
// are pushed to the WebSocket subscribers (conn.go) as update frames built
// from that view. A snapshot swap pushes the targets whose frame it
// changed (Swapped). Both happen under the view's writers' lock, in view
// order, so a subscriber's frames follow the views REST serves.

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eodata/eo/internal/tick"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// Options configures the push side. Zero values take the defaults.
type Options struct {
	// Feed is the live event source (in-process, or Redis so that every
	// instance pushes every event). Nil: no live events; the WebSocket still
	// serves snapshots of the loaded data.
	Feed live.Feed
	// Tickets stores WebSocket tickets; share one (Redis) between instances
	// so a ticket minted on one is redeemable on another. Default in-memory.
	Tickets TicketStore
	// Limiter caps concurrent connections per key; share one (Redis) between
	// instances so the cap holds across them. Default in-memory.
	Limiter ConnLimiter
	// ConnLimits is the per-key connection cap per plan (the edge passes
	// the plans' ws_connections); a plan not listed gets the standard cap.
	// Nil: connections are not capped.
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
	// Active reports whether the key a connection was opened with still
	// opens it (a revoked or expired key loses its connections within a
	// second, as it loses REST). Nil: keys stay active.
	Active func(keyID string) bool
	// Now is the clock of ticket expiry and of the changes feed (default
	// time.Now).
	Now func() time.Time
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Tickets == nil {
		o.Tickets = NewMemoryTickets(o.Now)
	}
	if o.Limiter == nil {
		o.Limiter = NewMemoryLimiter()
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

// Push is the push side of one edge: it applies the live feed to the
// served view (its tracker) and pushes what each change made to the
// WebSocket connections it serves.
type Push struct {
	o       Options
	log     *slog.Logger
	views   *view.Current
	hub     *Hub
	tracker *live.Tracker
	// hist holds every target's latest updates for resuming clients; used
	// under the view's writers' lock only (Stats excepted).
	hist *History
	// changes are the live changes the changes feed serves (changes.go).
	changes *Changes
	conns   atomic.Int64
	// flushers write the connections' frames (writer.go); next picks the
	// flusher of the next connection.
	flushers []*flusher
	next     atomic.Uint64
	// openConns are the open connections and byKey the same by key (the
	// pings, the key checks).
	openMu    sync.Mutex
	openConns map[*conn]struct{}
	byKey     map[string]map[*conn]struct{}
	// ws counts the WebSocket channel for /metrics (metrics.go).
	ws wsStats
	// feed is the feed subscription's state, for /ready.
	feed feedState
}

// New returns the push side of views.
func New(views *view.Current, o Options) *Push {
	o.defaults()
	p := &Push{o: o, log: o.Logger, views: views, hub: NewHub(), hist: NewHistory(o.ResumeBuffer), changes: newChanges(),
		flushers: newFlushers(), openConns: map[*conn]struct{}{}, byKey: map[string]map[*conn]struct{}{}}
	p.tracker = live.NewTracker(views, p.applied)
	go p.pingLoop()
	return p
}

// Tracker is the tracker applying the feed to the view.
func (p *Push) Tracker() *live.Tracker { return p.tracker }

// Hub is the fan-out of frames to the connections' subscriptions.
func (p *Push) Hub() *Hub { return p.hub }

// Changes are the live changes held for the changes feed.
func (p *Push) Changes() *Changes { return p.changes }

// HasFeed reports whether a feed is configured (attached or given).
func (p *Push) HasFeed() bool { return p.o.Feed != nil }

// Stats are counters of the push side.
type Stats struct {
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

// Stats reports the counters.
func (p *Push) Stats() Stats {
	st := p.tracker.Stats()
	n := 0
	if v := p.views.Load(); v != nil {
		n = v.LiveMatches()
	}
	return Stats{Connections: p.conns.Load(), Events: st.Events, DroppedEvents: st.Dropped, WithheldLines: st.Withheld,
		OverlayMatches: n, RejectedEvents: st.Rejected}
}

// Start subscribes to the configured feed (a feed that does not answer is
// retried every second meanwhile: the snapshot serves without it) and,
// with Options.Active, checks the open connections' keys every second,
// until ctx ends.
func (p *Push) Start(ctx context.Context) {
	if p.o.Feed != nil {
		err := p.RunLive(ctx)
		if err != nil {
			// The snapshot serves without the feed (Redis down at start):
			// the live path subscribes once the feed answers.
			p.log.Warn("live feed unavailable at start: no live updates until it answers; retrying every second", "err", err)
			p.feed.set("live feed unavailable: " + err.Error())
		} else {
			p.feed.set("")
		}
		go p.keepLive(ctx, err == nil)
	}
	if p.o.Active != nil {
		go tick.Every(ctx, time.Second, func(context.Context) error {
			p.closeInactive()
			return nil
		}, func(error) {})
	}
}

// RunLive consumes the configured feed until ctx ends (Start calls it). It
// returns once subscribed, so an event published afterwards is seen.
func (p *Push) RunLive(ctx context.Context) error {
	if p.o.Feed == nil || p.tracker.Running() {
		return nil
	}
	return p.tracker.Start(ctx, p.o.Feed)
}

// AttachFeed starts consuming f when the push side was built without a
// feed (the embedded default creates its in-process feed once the edge
// runs).
func (p *Push) AttachFeed(ctx context.Context, f live.Feed) error {
	if p.tracker.Running() {
		return live.ErrRunning
	}
	p.o.Feed = f
	return p.RunLive(ctx)
}

// keepLive keeps the tracker subscribed to the feed until ctx ends: each
// second after the subscription failed (Redis down at start: the snapshot
// serves without the feed meanwhile) or ended (a connection found dead:
// live.RedisFeed.Idle), and records it for /ready's live_feed. Events
// published in between are a gap in the feed's positions: a client
// resuming across it gets a resync.
func (p *Push) keepLive(ctx context.Context, subscribed bool) {
	failing := !subscribed
	tick.Every(ctx, time.Second, func(context.Context) error {
		if p.tracker.Running() {
			return nil
		}
		if subscribed {
			p.log.Warn("live feed subscription ended (its connection closed or went silent); subscribing again")
			p.feed.set("the live feed subscription ended (its connection closed or went silent); subscribing again")
			subscribed = false
		}
		if err := p.RunLive(ctx); err != nil {
			if !failing {
				p.log.Warn("live feed unavailable: no live updates until it answers; retrying every second", "err", err)
				failing = true
			}
			p.feed.set("live feed unavailable: " + err.Error())
			return nil
		}
		if failing {
			p.log.Info("live feed subscribed")
		}
		p.feed.set("")
		subscribed, failing = true, false
		return nil
	}, func(error) {})
}

// FeedState is the feed subscription's state for /ready: "" while
// subscribed, else why not, and since when.
func (p *Push) FeedState() (problem string, since time.Time) { return p.feed.get() }

// ReplaySource is the local replay's source of matches: the served view's
// live matches, then the next scheduled ones.
func (p *Push) ReplaySource() func(skip func(upstream string) bool) (live.ReplayMatch, bool) {
	return live.ReplaySource(p.views)
}

// applied pushes a batch's updates and holds them for resuming clients
// (of every target the batch changed, subscribed here or not); called by the
// tracker under the view's writers' lock.
func (p *Push) applied(v *view.View, ap view.Applied) {
	at := p.tracker.Position()
	p.recordChanges(at.Seq, ap)
	for _, id := range ap.Matches {
		target := "match:" + id.String()
		b := updateFrame(target, at.Seq, 2048)
		if b, ok := v.AppendMatchFrame(b, id); ok {
			p.pushUpdate(target, sealFrame(append(b, '}')), false, at)
		}
	}
	for _, u := range ap.Odds {
		target := "odds:" + u.Match.String()
		b := updateFrame(target, at.Seq, len(u.Lines))
		p.pushUpdate(target, sealFrame(append(append(b, u.Lines...), '}')), false, at)
	}
}

// Swapped pushes, after a snapshot swap, an update to every target whose
// frame the new snapshot changed (new data landed, the live state folded
// into the snapshot), so subscribers hold what REST serves: the subscribed
// targets and those with updates held for resuming clients. Call it under
// the view's writers' lock, once cur is served.
func (p *Push) Swapped(old, cur *view.View) {
	at := p.tracker.Position()
	if old != nil {
		p.pushSwapped(old, cur, at)
	}
	// Updates of closed or unknown matches nobody listens to here are
	// forgotten (no more will come; a resuming client gets a snapshot).
	p.hist.Drop(func(target string) bool {
		if p.hub.Has(target) {
			return true
		}
		_, rest, _ := strings.Cut(target, ":")
		id, _ := tables.ParseID(rest)
		m, ok := cur.Match(id)
		return ok && m.Status != "completed" && m.Status != "cancelled"
	})
	p.hist.Swapped(at)
	p.changes.drop(func(id tables.ID) bool { _, ok := cur.Match(id); return ok })
	p.tracker.Rebased(cur)
}

// pushSwapped pushes the update of every target whose frame differs
// between old and cur.
func (p *Push) pushSwapped(old, cur *view.View, at live.Position) {
	targets := p.hub.Targets()
	for _, t := range p.hist.Targets() {
		if !p.hub.Has(t) {
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
			p.pushUpdate(target, sealFrame(append(f, '}')), true, at)
		}
	}
}

// updateFrame starts an update frame of target numbered seq (room for its
// header, then its payload), to be completed with the data and '}' and
// sealed (sealFrame).
func updateFrame(target string, seq uint64, data int) []byte {
	b := make([]byte, headerRoom, headerRoom+data+len(target)+64)
	b = append(b, `{"type":"update","target":"`...)
	b = append(b, target...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, `,"data":`...)
}

// pushUpdate holds an update frame (sealed) for resuming clients and
// pushes it to the target's subscribers.
func (p *Push) pushUpdate(target string, frame []byte, swap bool, at live.Position) {
	p.hist.Record(target, frame, swap, at)
	p.hub.Broadcast(target, frame)
}

// feedState is the feed subscription's state for /ready's "live_feed"
// (keepLive writes it).
type feedState struct {
	mu    sync.Mutex
	err   string // "" while subscribed
	since time.Time
}

// set records the subscription's state: subscribed (err "") or not, why.
func (f *feedState) set(err string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if (err == "") != (f.err == "") || f.since.IsZero() {
		f.since = time.Now()
	}
	f.err = err
}

func (f *feedState) get() (string, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	since := f.since
	if since.IsZero() {
		since = time.Now()
	}
	return f.err, since
}

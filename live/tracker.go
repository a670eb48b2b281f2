package live

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eodata/eo/market"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// Tracker applies the live feed to the served view. Each batch of events
// becomes one view.Changes in service ids (upstream ids mapped with the
// view's live_ids; prices aggregated into eo_market lines by the batch
// rules) and one new View, installed through view.Current.Update. OnApply
// runs under the same lock, so what it pushes (the WebSocket updates) is in
// the order of the views.
type Tracker struct {
	cur     *view.Current
	onApply func(*view.View, view.Applied)
	agg     *Aggregator
	pos     Position // under cur's writers' lock
	// last is, per match of the batch being applied, the feed position
	// of its last score event and of its last price event (EventSeq).
	last     map[tables.ID][2]uint64
	running  atomic.Bool
	events   atomic.Int64
	dropped  atomic.Int64
	skipped  atomic.Int64
	withheld atomic.Int64
	// rejected counts the events refused, by reason (problem).
	rejected sync.Map // string → *atomic.Int64
	// Now is the clock an event's changed_at or captured_at is checked
	// against, as the lander's landed_at will be (nil: time.Now).
	Now func() time.Time
}

// NewTracker returns a tracker of cur; onApply (may be nil) is called with
// each new view and what its batch changed.
func NewTracker(cur *view.Current, onApply func(*view.View, view.Applied)) *Tracker {
	return &Tracker{cur: cur, onApply: onApply, agg: NewAggregator()}
}

// TrackerStats are the tracker's counters.
type TrackerStats struct {
	Events  int64 // events for matches the view knows
	Dropped int64 // events for matches the view does not know (no live_ids entry)
	Skipped int64 // changes not newer than what the view held
	// Withheld counts eo_market lines not served because they count fewer
	// books than the snapshot's line of their series.
	Withheld int64
	// Rejected counts the events (and finished maps) refused because the
	// pipeline would quarantine what they land as, by the pipeline's
	// reason.
	Rejected map[string]int64
}

// Stats reports the tracker's counters.
func (t *Tracker) Stats() TrackerStats {
	st := TrackerStats{Events: t.events.Load(), Dropped: t.dropped.Load(), Skipped: t.skipped.Load(), Withheld: t.withheld.Load(),
		Rejected: map[string]int64{}}
	t.rejected.Range(func(k, v any) bool {
		st.Rejected[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return st
}

// Position is where a tracker is in its feed (Event.Seq).
type Position struct {
	// Seq is the position of the newest event applied, or of the feed when
	// the tracker started (events not numbered by their feed are numbered
	// on from it).
	Seq uint64
	// Horizon: every event after it reached the tracker, none missing.
	// Events at or before it may not have (before the tracker started, or
	// lost in a gap of the feed).
	Horizon uint64
	// Epoch counts restarts of the feed's numbering (an event numbered
	// below the last): positions of different epochs are not comparable.
	Epoch uint64
}

// advance moves p past an event numbered seq (0: not numbered).
func (p *Position) advance(seq uint64) {
	switch {
	case seq == 0:
		p.Seq++
	case seq == p.Seq+1:
		p.Seq = seq
	case seq > p.Seq: // events missed
		p.Horizon, p.Seq = seq-1, seq
	default: // the numbering restarted
		p.Epoch++
		p.Horizon, p.Seq = seq-1, seq
	}
}

// Position reports where the tracker is in its feed. Call it under the
// view's writers' lock (view.Current.Update or Hold), which orders it with
// the batches applied.
func (t *Tracker) Position() Position { return t.pos }

// Running reports whether a feed is being consumed.
func (t *Tracker) Running() bool { return t.running.Load() }

// Start consumes f until ctx ends. It returns once subscribed, so an event
// published afterwards is seen. Events that queued up while a batch was
// being applied are applied together (up to 256).
func (t *Tracker) Start(ctx context.Context, f Feed) error {
	if !t.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	// The position first: an event published before Subscribe took effect
	// is then a gap the first event received shows (never a repeat).
	var start uint64
	p, numbered := f.(Positioner)
	if numbered {
		var err error
		if start, err = p.Position(ctx); err != nil {
			numbered = false // the first event sets the horizon
		}
	}
	ch, err := f.Subscribe(ctx)
	if err != nil {
		t.running.Store(false)
		return err
	}
	if numbered {
		t.cur.Hold(func(*view.View) {
			if start < t.pos.Seq {
				t.pos.Epoch++
			}
			t.pos.Seq, t.pos.Horizon = start, start
		})
	}
	go func() {
		defer t.running.Store(false)
		batch := make([]Event, 0, 256)
		for {
			ev, ok := <-ch
			if !ok {
				return
			}
			batch = append(batch[:0], ev)
		drain:
			for len(batch) < cap(batch) {
				select {
				case ev, ok := <-ch:
					if !ok {
						break drain
					}
					batch = append(batch, ev)
				default:
					break drain
				}
			}
			t.Apply(batch)
		}
	}()
	return nil
}

// Apply applies a batch of events. Price captures are applied first and
// each touched market evaluated once, at its newest capture, as the batch
// pipeline evaluates a market once per capture instant.
func (t *Tracker) Apply(evs []Event) {
	t.cur.Update(func(v *view.View) (*view.View, func()) {
		for i := range evs {
			t.pos.advance(evs[i].Seq)
		}
		if v == nil {
			t.dropped.Add(int64(len(evs)))
			return nil, nil
		}
		now := time.Now()
		if t.Now != nil {
			now = t.Now()
		}
		nv, ap := v.Apply(t.changes(v, evs, now))
		t.skipped.Add(int64(ap.Skipped))
		t.withheld.Add(int64(ap.Withheld))
		if nv == v {
			return nil, nil
		}
		if t.onApply == nil {
			return nv, nil
		}
		// The frames go out once nv is served (Current.Update).
		return nv, func() { t.onApply(nv, ap) }
	})
}

// touchedMarkets are the markets a batch's price events touched, in the
// order first touched, with their match and newest capture.
type touchedMarkets struct {
	at    map[market.Key]*touchedMarket
	order []market.Key
}

type touchedMarket struct {
	match tables.ID
	at    time.Time
}

// changes are the view's changes of a batch: each score event's match
// state, and the eo_market lines of the markets its price events touched.
// Events of matches the view does not know are dropped, those the
// pipeline would quarantine rejected (both counted).
func (t *Tracker) changes(v *view.View, evs []Event, now time.Time) view.Changes {
	snap := v.Snapshot()
	t.last = map[tables.ID][2]uint64{}
	touched := touchedMarkets{at: map[market.Key]*touchedMarket{}}
	var ch view.Changes
	for i := range evs {
		ev := pipelinePrecision(&evs[i])
		id, ok := snap.MatchByUpstream(ev.MatchID)
		if !ok {
			t.dropped.Add(1)
			continue
		}
		var format string
		if m, _ := v.Match(id); m != nil {
			format = m.Format
		}
		if !t.admit(ev, format, now) {
			continue
		}
		seqs := t.last[id]
		seqs[eventSlot(ev.Kind)] = max(seqs[eventSlot(ev.Kind)], ev.Seq)
		t.last[id] = seqs
		switch ev.Kind {
		case KindScore:
			ch.Matches = append(ch.Matches, t.matchState(id, ev, format, now))
		case KindPrice:
			t.price(&touched, id, ev)
		}
	}
	for _, k := range touched.order {
		tm := touched.at[k]
		for _, ln := range t.agg.Evaluate(k, tm.at) {
			ch.Lines = append(ch.Lines, liveLine(tm.match, k, ln))
		}
	}
	return ch
}

// admit checks an event as the pipeline checks what it lands as (outright
// prices are not served live, so not checked): false, counted as
// rejected, when the pipeline would quarantine it; else counted.
func (t *Tracker) admit(ev *Event, format string, now time.Time) bool {
	if recs := rawRecords(*ev); len(recs) > 0 && (ev.Kind == KindScore || ev.Market != "outright") {
		if why := problem(recs[0].e, recs[0].rec, format, now); why != "" {
			t.reject(why)
			return false
		}
	}
	t.events.Add(1)
	return true
}

// price applies a price event of match id to its market's aggregation and
// records the market as touched (outright prices are not served live).
func (t *Tracker) price(touched *touchedMarkets, id tables.ID, ev *Event) {
	if ev.Market == "outright" {
		return
	}
	k := market.Key{Market: ev.Market, MatchID: id.String()}
	if ev.Market == "map_winner" {
		if ev.MapNumber == nil {
			return
		}
		k.MapNumber = *ev.MapNumber
	}
	if ev.Line != nil {
		k.Line, k.HasLine = *ev.Line, true
	}
	t.agg.Apply(k, market.Quote{Contributor: ev.Contributor(), Book: ev.Book, Outcome: ev.Outcome,
		Price: ev.Price, At: ev.CapturedAt})
	tm := touched.at[k]
	if tm == nil {
		tm = &touchedMarket{match: id}
		touched.at[k] = tm
		touched.order = append(touched.order, k)
	}
	if ev.CapturedAt.After(tm.at) {
		tm.at = ev.CapturedAt
	}
}

// EventSeq is the feed position of the last event of kind (KindScore or
// KindPrice) for match id in the batch whose changes onApply receives, 0
// when it has none. Unlike the batch's position, it does not depend on how
// an instance happened to batch the feed: every instance of a feed gives a
// change the same position.
func (t *Tracker) EventSeq(id tables.ID, kind string) uint64 { return t.last[id][eventSlot(kind)] }

func eventSlot(kind string) int {
	if kind == KindPrice {
		return 1
	}
	return 0
}

// Rebased drops the aggregator's markets of matches a newly loaded view
// shows closed (completed or cancelled) or does not know: their lines are
// in the snapshot, and no more prices are expected.
func (t *Tracker) Rebased(v *view.View) {
	t.agg.ForgetIf(func(matchID string) bool {
		id, ok := tables.ParseID(matchID)
		if !ok {
			return true
		}
		m, ok := v.Match(id)
		return !ok || m.Status == "completed" || m.Status == "cancelled"
	})
}

// pipelinePrecision is a copy of ev with its times as the pipeline stores
// them (raw.Instant): the view then shows an event's times as the snapshot
// that lands it will, and a client sees no change of started_at or
// changed_at when that snapshot is swapped in.
func pipelinePrecision(ev *Event) *Event {
	c := *ev
	c.ChangedAt, c.CapturedAt = raw.Instant(c.ChangedAt), raw.Instant(c.CapturedAt)
	if len(c.Maps) > 0 {
		c.Maps = append([]MapScore(nil), c.Maps...)
		for i := range c.Maps {
			if !c.Maps[i].StartedAt.IsZero() {
				c.Maps[i].StartedAt = raw.Instant(c.Maps[i].StartedAt)
			}
		}
	}
	return &c
}

// reject counts a score event refused for why.
func (t *Tracker) reject(why string) {
	n, _ := t.rejected.LoadOrStore(why, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

// matchState is the view's state of a score event: its finished maps but
// those the pipeline would quarantine (counted as rejected), as the next
// snapshot will hold them.
func (t *Tracker) matchState(id tables.ID, ev *Event, format string, now time.Time) view.MatchState {
	st := view.MatchState{ID: id, Status: ev.Status, ScoreA: ev.ScoreA, ScoreB: ev.ScoreB, ResultType: ev.ResultType,
		LiveState: ev.LiveState, ChangedAt: ev.ChangedAt}
	landed := rawRecords(*ev)[1:] // the finished maps, as they land
	for _, m := range ev.Maps {
		if !m.Done {
			continue // the map in play is in live_state
		}
		rec := landed[0]
		landed = landed[1:]
		if why := problem(rec.e, rec.rec, format, now); why != "" {
			t.reject("map: " + why)
			continue
		}
		st.Maps = append(st.Maps, view.MapScore{Number: m.MapNumber, Name: m.MapName, ScoreA: m.ScoreA, ScoreB: m.ScoreB,
			FirstHalfA: m.FirstHalfA, FirstHalfB: m.FirstHalfB, SecondHalfA: m.SecondHalfA, SecondHalfB: m.SecondHalfB,
			OvertimeA: m.OvertimeA, OvertimeB: m.OvertimeB, FirstHalfSideA: sideOr(m.FirstHalfSideA), StartedAt: m.StartedAt})
	}
	return st
}

// sideOr is the side landed for a map without one (live/lander.go lands
// "ct"), so the live row equals the next snapshot's.
func sideOr(s string) string {
	if s == "" {
		return "ct"
	}
	return s
}

// liveLine is the view's line of market k's published line ln.
func liveLine(match tables.ID, k market.Key, ln market.Line) view.LiveLine {
	mid := k.ID()
	l := view.LiveLine{ID: tables.ID(market.LineID(mid, ln.Outcome, "eo_market", ln.At)), MarketID: tables.ID(mid), MatchID: match, Market: k.Market, MapNumber: k.MapNumber,
		Outcome: ln.Outcome, Price: ln.Price, BookCount: ln.Books, CapturedAt: ln.At, Retract: ln.Retract}
	if k.HasLine {
		x := k.Line
		l.Line = &x
	}
	return l
}

// ReplaySource returns the replay's source of matches (Replay.Next): the
// best candidate of the served view that skip does not exclude.
func ReplaySource(cur *view.Current) func(skip func(upstream string) bool) (ReplayMatch, bool) {
	return func(skip func(string) bool) (ReplayMatch, bool) {
		v := cur.Load()
		if v == nil {
			return ReplayMatch{}, false
		}
		cs := v.ReplayCandidates(1, skip)
		if len(cs) == 0 {
			return ReplayMatch{}, false
		}
		c := cs[0]
		bo := 3
		switch c.Format {
		case "bo1":
			bo = 1
		case "bo5":
			bo = 5
		}
		rm := ReplayMatch{UpstreamID: c.UpstreamID, BestOf: bo, Status: c.Status, ScoreA: c.ScoreA, ScoreB: c.ScoreB}
		for _, m := range c.Maps {
			ms := MapScore{MapNumber: m.MapNumber, MapName: m.MapName, ScoreA: m.ScoreA, ScoreB: m.ScoreB, Done: true,
				FirstHalfA: m.FirstHalfA, FirstHalfB: m.FirstHalfB, SecondHalfA: m.SecondHalfA, SecondHalfB: m.SecondHalfB,
				OvertimeA: m.OvertimeA, OvertimeB: m.OvertimeB}
			if m.FirstHalfSideA != nil {
				ms.FirstHalfSideA = *m.FirstHalfSideA
			}
			if m.StartedAt != nil {
				ms.StartedAt = *m.StartedAt
			}
			rm.Maps = append(rm.Maps, ms)
		}
		return rm, true
	}
}

package edge

// The live path on the edge: consumes the live feed, keeps a small overlay
// of live match state and live eo_market lines on top of the loaded
// snapshot, pushes frames to WebSocket subscribers (ws.go), and splices the
// overlay into the REST match and odds responses.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/live"
)

// LiveOptions configures the live path. Zero values take the defaults.
type LiveOptions struct {
	// Feed is the live event source (in-process, or Redis so that every
	// instance pushes every event). Nil: no live events; the WebSocket still
	// serves snapshots of the loaded data.
	Feed live.Feed
	// Tickets stores WebSocket tickets; share one (Redis) between instances
	// so a ticket minted on one is redeemable on another. Default in-memory.
	Tickets live.TicketStore
	// Limiter caps concurrent connections per key; share one (Redis) between
	// instances so the cap holds across them. Default in-memory.
	Limiter live.ConnLimiter
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
}

func (o *LiveOptions) defaults(now func() time.Time) {
	if o.Tickets == nil {
		o.Tickets = live.NewMemoryTickets(now)
	}
	if o.Limiter == nil {
		o.Limiter = live.NewMemoryLimiter()
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
}

// liveMatch is a match's live state, newer than the snapshot's.
type liveMatch struct {
	Status     string
	ScoreA     *int
	ScoreB     *int
	ResultType *string
	LiveState  json.RawMessage
	Maps       []live.MapScore
	ChangedAt  time.Time
	version    uint64
	// rendered caches the overlaid JSON against one snapshot and version.
	rendered atomic.Pointer[overlayRender]
}

type overlayRender struct {
	snapID  string
	version uint64
	old     []byte // the snapshot's match JSON without its closing brace
	new     []byte // the overlaid match JSON without its closing brace
}

// liveIDs resolves upstream ids (the feed's) to service ids, from the
// snapshot's live_ids table.
type liveIDs struct {
	snapID  string
	matches map[string]ID
	up      map[ID]string
}

type liveIDRow struct {
	Kind       string `col:"kind"`
	UpstreamID string `col:"upstream_id"`
	ID         ID     `col:"id"`
}

type liveState struct {
	s   *Server
	o   LiveOptions
	hub *live.Hub
	agg *live.Aggregator
	ids atomic.Pointer[liveIDs]

	// mu guards the overlay and orders state changes against subscriptions:
	// a subscriber gets its snapshot frame and every later update, in order.
	mu      sync.RWMutex
	matches map[ID]*liveMatch
	odds    map[ID]map[string]live.MarketLine // match -> market_id|outcome -> newest live line
	firstPx map[string]float64                // market_id|outcome -> first live price (open when the snapshot has none)
	seq     map[string]uint64                 // target -> last update seq
	version atomic.Uint64
	running atomic.Bool
	conns   atomic.Int64
	dropped atomic.Int64 // events for ids the snapshot does not know
	events  atomic.Int64
}

func newLiveState(s *Server, o LiveOptions) *liveState {
	o.defaults(s.o.Now)
	return &liveState{s: s, o: o, hub: live.NewHub(), agg: live.NewAggregator(), matches: map[ID]*liveMatch{},
		odds: map[ID]map[string]live.MarketLine{}, firstPx: map[string]float64{}, seq: map[string]uint64{}}
}

// LiveStats are counters of the live path.
type LiveStats struct {
	Connections    int64 // WebSocket connections open on this instance
	Events         int64 // feed events applied
	DroppedEvents  int64 // events whose match the snapshot does not know
	OverlayMatches int   // matches with live state newer than the snapshot
}

// LiveStats reports the live path's counters.
func (s *Server) LiveStats() LiveStats {
	l := s.live
	l.mu.RLock()
	n := len(l.matches)
	l.mu.RUnlock()
	return LiveStats{Connections: l.conns.Load(), Events: l.events.Load(), DroppedEvents: l.dropped.Load(), OverlayMatches: n}
}

// RunLive consumes the live feed until ctx ends (Start calls it). It returns
// once subscribed, so an event published afterwards is seen.
func (s *Server) RunLive(ctx context.Context) error {
	l := s.live
	if l.o.Feed == nil || !l.running.CompareAndSwap(false, true) {
		return nil
	}
	ch, err := l.o.Feed.Subscribe(ctx)
	if err != nil {
		l.running.Store(false)
		return err
	}
	go func() {
		defer l.running.Store(false)
		batch := make([]live.Event, 0, 256)
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
			l.apply(batch)
		}
	}()
	return nil
}

// apply applies a batch of events. Price captures are applied first and
// each touched market evaluated once at its newest capture, as the batch
// pipeline evaluates a market once per capture instant.
func (l *liveState) apply(evs []live.Event) {
	snap := l.s.acquire()
	if snap == nil {
		return
	}
	defer l.s.release(snap)
	ids := l.ids.Load()
	type touched struct {
		match ID
		at    time.Time
	}
	markets := map[live.MarketKey]*touched{}
	var order []live.MarketKey
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range evs {
		ev := &evs[i]
		var id ID
		ok := false
		if ids != nil {
			id, ok = ids.matches[ev.MatchID]
		}
		if !ok {
			l.dropped.Add(1)
			continue
		}
		mi, ok := snap.matchByID[id]
		if !ok {
			l.dropped.Add(1)
			continue
		}
		l.events.Add(1)
		switch ev.Kind {
		case live.KindScore:
			l.applyScore(snap, mi, ev)
		case live.KindPrice:
			if ev.Price <= 1 || ev.Market == "outright" || ev.Outcome == "" {
				continue
			}
			k := live.MarketKey{Market: ev.Market, MatchID: id.String()}
			if ev.Market == "map_winner" {
				if ev.MapNumber == nil {
					continue
				}
				k.MapNumber = *ev.MapNumber
			}
			if ev.Line != nil {
				k.Line, k.HasLine = *ev.Line, true
			}
			l.agg.Apply(k, live.Quote{Contributor: ev.Contributor(), Book: ev.Book, Outcome: ev.Outcome,
				Price: ev.Price, CapturedAt: ev.CapturedAt})
			t := markets[k]
			if t == nil {
				t = &touched{match: id}
				markets[k] = t
				order = append(order, k)
			}
			if ev.CapturedAt.After(t.at) {
				t.at = ev.CapturedAt
			}
		}
	}
	byMatch := map[ID][]live.MarketLine{}
	var matchOrder []ID
	for _, k := range order {
		t := markets[k]
		lines := l.agg.Evaluate(k, t.at)
		if len(lines) == 0 {
			continue
		}
		if byMatch[t.match] == nil {
			matchOrder = append(matchOrder, t.match)
		}
		byMatch[t.match] = append(byMatch[t.match], lines...)
	}
	for _, id := range matchOrder {
		lines := byMatch[id]
		m := l.odds[id]
		if m == nil {
			m = map[string]live.MarketLine{}
			l.odds[id] = m
		}
		for _, ln := range lines {
			k := ln.MarketID + "|" + ln.Outcome
			m[k] = ln
			if _, ok := l.firstPx[k]; !ok {
				l.firstPx[k] = ln.Price
			}
		}
		target := "odds:" + id.String()
		if l.hub.Has(target) {
			rows := l.renderLines(snap, snap.matchByID[id], lines)
			l.broadcastUpdate(target, joinArray(rows))
		}
	}
	if len(markets) > 0 || len(evs) > 0 {
		l.version.Add(1)
	}
}

func (l *liveState) applyScore(snap *Snapshot, mi int32, ev *live.Event) {
	m := &snap.matches[mi]
	if !ev.ChangedAt.After(m.ChangedAt) {
		return // the snapshot already has this state (or newer)
	}
	cur := l.matches[m.ID]
	if cur != nil && ev.ChangedAt.Before(cur.ChangedAt) {
		return // out of order
	}
	lm := &liveMatch{Status: ev.Status, ScoreA: ev.ScoreA, ScoreB: ev.ScoreB, ResultType: ev.ResultType,
		LiveState: ev.LiveState, Maps: ev.Maps, ChangedAt: ev.ChangedAt, version: l.version.Add(1)}
	l.matches[m.ID] = lm
	target := "match:" + m.ID.String()
	if l.hub.Has(target) {
		l.broadcastUpdate(target, l.matchFrameData(snap, mi))
	}
}

// broadcastUpdate numbers and pushes an update frame. Caller holds l.mu.
func (l *liveState) broadcastUpdate(target string, data []byte) {
	l.seq[target]++
	b := make([]byte, 0, len(data)+len(target)+64)
	b = append(b, `{"type":"update","target":"`...)
	b = append(b, target...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, l.seq[target], 10)
	b = append(b, `,"data":`...)
	b = append(b, data...)
	b = append(b, '}')
	l.hub.Broadcast(target, b)
}

// overlaid renders match mi with its live state (nil when it has none).
// Caller holds l.mu (read or write).
func (l *liveState) overlaid(snap *Snapshot, mi int32) *overlayRender {
	m := &snap.matches[mi]
	lm := l.matches[m.ID]
	if lm == nil {
		return nil
	}
	if r := lm.rendered.Load(); r != nil && r.snapID == snap.ID && r.version == lm.version {
		return r
	}
	x := *m
	x.Status = lm.Status
	x.ChangedAt = lm.ChangedAt.UTC()
	x.LiveState = nil
	x.ScoreA, x.ScoreB = nil, nil
	switch lm.Status {
	case "live", "completed":
		a, b := 0, 0
		if lm.ScoreA != nil {
			a = *lm.ScoreA
		}
		if lm.ScoreB != nil {
			b = *lm.ScoreB
		}
		x.ScoreA, x.ScoreB = &a, &b
		if x.StartedAt == nil {
			t := lm.ChangedAt.UTC()
			x.StartedAt = &t
		}
	}
	x.EndedAt, x.WinnerTeamID, x.ResultType = nil, nil, nil
	if lm.Status == "live" && len(lm.LiveState) > 0 {
		x.LiveState = lm.LiveState
	}
	if lm.Status == "completed" {
		t := lm.ChangedAt.UTC()
		x.EndedAt = &t
		switch {
		case *x.ScoreA > *x.ScoreB:
			w := x.TeamAID
			x.WinnerTeamID = &w
		case *x.ScoreB > *x.ScoreA:
			w := x.TeamBID
			x.WinnerTeamID = &w
		}
		rt := "played"
		if lm.ResultType != nil && *lm.ResultType != "" {
			rt = *lm.ResultType
		}
		x.ResultType = &rt
	}
	old := snap.matchJSON[mi]
	nb := mustJSON(&x)
	r := &overlayRender{snapID: snap.ID, version: lm.version, old: old[:len(old)-1], new: nb[:len(nb)-1]}
	lm.rendered.Store(r)
	return r
}

type mapScoreJSON struct {
	MapNumber int    `json:"map_number"`
	MapName   string `json:"map_name"`
	ScoreA    int    `json:"score_a"`
	ScoreB    int    `json:"score_b"`
}

// matchFrameData is a match frame's data: the Match row (overlaid) plus
// "maps": [{map_number, map_name, score_a, score_b}] (the live map included).
// Caller holds l.mu.
func (l *liveState) matchFrameData(snap *Snapshot, mi int32) []byte {
	m := &snap.matches[mi]
	base := snap.matchJSON[mi]
	base = base[:len(base)-1]
	if r := l.overlaid(snap, mi); r != nil {
		base = r.new
	}
	var maps []mapScoreJSON
	if lm := l.matches[m.ID]; lm != nil && len(lm.Maps) > 0 {
		for _, x := range lm.Maps {
			maps = append(maps, mapScoreJSON{x.MapNumber, x.MapName, x.ScoreA, x.ScoreB})
		}
	} else if d := snap.matchData[m.ID]; d != nil && len(d.maps.b) > 0 {
		_ = json.Unmarshal(d.maps.b, &maps)
	}
	if maps == nil {
		maps = []mapScoreJSON{}
	}
	b := make([]byte, 0, len(base)+256)
	b = append(b, base...)
	b = append(b, `,"maps":`...)
	b = append(b, mustJSON(maps)...)
	return append(b, '}')
}

// oddsRow is the REST odds line shape (see openapi.yaml OddsLine).
type oddsRow struct {
	ID              string   `json:"id"`
	MatchID         *ID      `json:"match_id"`
	TournamentID    *ID      `json:"tournament_id"`
	MarketID        string   `json:"market_id"`
	Market          string   `json:"market"`
	MapNumber       *int     `json:"map_number"`
	Source          string   `json:"source"`
	ModelVersion    *string  `json:"model_version"`
	BookCount       *int     `json:"book_count"`
	OutcomeKey      string   `json:"outcome_key"`
	Label           string   `json:"label"`
	ParticipantType *string  `json:"participant_type"`
	ParticipantID   *ID      `json:"participant_id"`
	Line            *float64 `json:"line"`
	Price           float64  `json:"price"`
	IsWinner        *bool    `json:"is_winner"`
	IsClosing       bool     `json:"is_closing"`
	OpenPrice       float64  `json:"open_price"`
	DeltaSinceOpen  float64  `json:"delta_since_open"`
	CapturedAt      string   `json:"captured_at"`
}

// snapshotSeries is a series' key and open price on a snapshot's latest
// odds rows.
type snapshotSeries struct {
	MarketID   string    `json:"market_id"`
	OutcomeKey string    `json:"outcome_key"`
	Source     string    `json:"source"`
	OpenPrice  float64   `json:"open_price"`
	CapturedAt time.Time `json:"captured_at"`
}

func snapshotOdds(snap *Snapshot, match ID) []snapshotSeries {
	var rows []snapshotSeries
	if b := snap.oddsLatestJSON(match); len(b) > 0 {
		_ = json.Unmarshal(b, &rows)
	}
	return rows
}

// renderLines renders live lines in the REST shape, labelled as the batch
// labels them (sql/derive/00_odds.sql). Caller holds l.mu.
func (l *liveState) renderLines(snap *Snapshot, mi int32, lines []live.MarketLine) [][]byte {
	m := &snap.matches[mi]
	open := map[string]float64{}
	for _, r := range snapshotOdds(snap, m.ID) {
		if r.Source == "eo_market" && r.OpenPrice > 1 {
			open[r.MarketID+"|"+r.OutcomeKey] = r.OpenPrice
		}
	}
	name := func(id ID) string {
		if ti, ok := snap.teamByID[id]; ok {
			return snap.teams[ti].Name
		}
		return ""
	}
	out := make([][]byte, 0, len(lines))
	for _, ln := range lines {
		mid := m.ID
		bc := ln.BookCount
		r := oddsRow{ID: ln.ID(), MatchID: &mid, MarketID: ln.MarketID, Market: ln.Key.Market, Source: "eo_market",
			BookCount: &bc, OutcomeKey: ln.Outcome, Price: ln.Price,
			CapturedAt: ln.CapturedAt.UTC().Format("2006-01-02T15:04:05.999999Z07:00")}
		if ln.Key.MapNumber > 0 {
			n := ln.Key.MapNumber
			r.MapNumber = &n
		}
		if ln.Key.HasLine {
			v := ln.Key.Line
			r.Line = &v
		}
		team, side := m.TeamAID, 1.0
		if ln.Outcome == "away" {
			team, side = m.TeamBID, -1.0
		}
		switch ln.Key.Market {
		case "total_maps":
			if ln.Outcome == "over" {
				r.Label = "Over " + live.DuckDouble(ln.Key.Line)
			} else {
				r.Label = "Under " + live.DuckDouble(ln.Key.Line)
			}
		case "map_handicap":
			r.Label = name(team) + " " + fmt.Sprintf("%+g", side*ln.Key.Line)
		case "map_winner":
			r.Label = name(team) + " (map " + strconv.Itoa(ln.Key.MapNumber) + ")"
		default:
			r.Label = name(team)
		}
		if ln.Key.Market != "total_maps" {
			pt := "team"
			r.ParticipantType = &pt
			r.ParticipantID = &team
		}
		k := ln.MarketID + "|" + ln.Outcome
		op, ok := open[k]
		if !ok {
			if op, ok = l.firstPx[k]; !ok {
				op = ln.Price
			}
		}
		r.OpenPrice = op
		r.DeltaSinceOpen = ln.Price - op
		out = append(out, mustJSON(&r))
	}
	return out
}

// liveLines returns a match's live lines newer than the snapshot, newest
// first. Caller holds l.mu.
func (l *liveState) liveLines(match ID) []live.MarketLine {
	m := l.odds[match]
	out := make([]live.MarketLine, 0, len(m))
	for _, ln := range m {
		out = append(out, ln)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CapturedAt.Equal(out[j].CapturedAt) {
			return out[i].CapturedAt.After(out[j].CapturedAt)
		}
		return out[i].ID() > out[j].ID()
	})
	return out
}

// oddsFrameData is an odds snapshot frame's data: the snapshot's latest
// lines of the match with the live ones in place of the series they
// supersede. Caller holds l.mu.
func (l *liveState) oddsFrameData(snap *Snapshot, mi int32) []byte {
	m := &snap.matches[mi]
	lines := l.liveLines(m.ID)
	rows := l.renderLines(snap, mi, lines)
	have := map[string]bool{}
	for _, ln := range lines {
		have[ln.MarketID+"|"+ln.Outcome] = true
	}
	var base []json.RawMessage
	if b := snap.oddsLatestJSON(m.ID); len(b) > 0 {
		_ = json.Unmarshal(b, &base)
	}
	for _, r := range base {
		var k snapshotSeries
		_ = json.Unmarshal(r, &k)
		if k.Source == "eo_market" && have[k.MarketID+"|"+k.OutcomeKey] {
			continue
		}
		rows = append(rows, r)
	}
	return joinArray(rows)
}

// swapped is called when a snapshot is installed: it learns the id map and
// drops overlay state the snapshot already contains (compared by
// changed_at and captured_at).
func (s *Server) liveSwapped(snap *Snapshot) {
	l := s.live
	if l == nil {
		return
	}
	ids := &liveIDs{snapID: snap.ID, matches: map[string]ID{}, up: map[ID]string{}}
	for _, t := range snap.Manifest.Tables {
		if t.Name != "live_ids" {
			continue
		}
		rows, err := readParquet[liveIDRow](context.Background(), filepath.Join(s.cacheRoot(), snap.ID, filepath.FromSlash(t.File)))
		if err != nil {
			s.log.Warn("live: live_ids unreadable; live events cannot be mapped", "snapshot", snap.ID, "err", err)
			break
		}
		for _, r := range rows {
			if r.Kind == "match" {
				ids.matches[r.UpstreamID] = r.ID
				ids.up[r.ID] = r.UpstreamID
			}
		}
	}
	l.ids.Store(ids)
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, lm := range l.matches {
		mi, ok := snap.matchByID[id]
		if !ok || !snap.matches[mi].ChangedAt.Before(lm.ChangedAt) {
			delete(l.matches, id)
		}
	}
	for id, lines := range l.odds {
		if _, ok := snap.matchByID[id]; !ok {
			delete(l.odds, id)
			l.agg.Forget(id.String())
			continue
		}
		latest := map[string]time.Time{}
		for _, r := range snapshotOdds(snap, id) {
			if r.Source == "eo_market" {
				latest[r.MarketID+"|"+r.OutcomeKey] = r.CapturedAt
			}
		}
		for k, ln := range lines {
			if t, ok := latest[k]; ok && !t.Before(ln.CapturedAt) {
				delete(lines, k)
			}
		}
		if len(lines) == 0 {
			delete(l.odds, id)
		}
	}
}

// UpstreamMatchIDs maps service match ids to upstream ids (from the loaded
// snapshot's live_ids); the local replay uses it.
func (s *Server) UpstreamMatchIDs() map[string]string {
	out := map[string]string{}
	if ids := s.live.ids.Load(); ids != nil {
		for id, up := range ids.up {
			out[id.String()] = up
		}
	}
	return out
}

// ReplayCandidates picks up to n matches for the local replay: live ones
// first, then the next scheduled, with their upstream ids.
func (s *Server) ReplayCandidates(n int) []live.ReplayMatch {
	snap := s.acquire()
	if snap == nil {
		return nil
	}
	defer s.release(snap)
	ids := s.live.ids.Load()
	if ids == nil {
		return nil
	}
	var liveOnes, sched []int
	for i := range snap.matches {
		switch snap.matches[i].Status {
		case "live":
			liveOnes = append(liveOnes, i)
		case "scheduled":
			sched = append(sched, i)
		}
	}
	sort.Slice(sched, func(a, b int) bool {
		return snap.matches[sched[a]].ScheduledAt.Before(snap.matches[sched[b]].ScheduledAt)
	})
	var out []live.ReplayMatch
	for _, i := range append(liveOnes, sched...) {
		if len(out) == n {
			break
		}
		m := &snap.matches[i]
		up, ok := ids.up[m.ID]
		if !ok {
			continue
		}
		bo, _ := strconv.Atoi(m.Format[2:])
		rm := live.ReplayMatch{UpstreamID: up, BestOf: bo, Status: m.Status}
		if m.ScoreA != nil && m.ScoreB != nil {
			rm.ScoreA, rm.ScoreB = *m.ScoreA, *m.ScoreB
		}
		out = append(out, rm)
	}
	return out
}

// ---- REST overlay

// withLiveMatches splices live match state into /matches rows and match
// detail: every pre-rendered match JSON in the body that has a live overlay
// is replaced by its overlaid rendering (cached per overlay version). Filters
// and ordering still evaluate the snapshot's values.
func (s *Server) withLiveMatches(h fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := h(c); err != nil {
			return err
		}
		l := s.live
		snap := snapOf(c)
		if snap == nil || c.Response().StatusCode() != fiber.StatusOK {
			return nil
		}
		l.mu.RLock()
		defer l.mu.RUnlock()
		if len(l.matches) == 0 {
			return nil
		}
		body := c.Response().Body()
		var out []byte
		last := 0
		const marker = `{"id":"`
		for i := 0; ; {
			j := bytes.Index(body[i:], []byte(marker))
			if j < 0 {
				break
			}
			at := i + j
			i = at + len(marker)
			if len(body) < i+36 {
				break
			}
			id, ok := ParseID(string(body[i : i+36]))
			if !ok || l.matches[id] == nil {
				continue
			}
			mi, ok := snap.matchByID[id]
			if !ok {
				continue
			}
			r := l.overlaid(snap, mi)
			if r == nil || !bytes.HasPrefix(body[at:], r.old) {
				continue
			}
			if out == nil {
				out = make([]byte, 0, len(body)+512)
			}
			out = append(out, body[last:at]...)
			out = append(out, r.new...)
			last = at + len(r.old)
			i = last
		}
		if out != nil {
			out = append(out, body[last:]...)
			c.Response().SetBody(out)
		}
		return nil
	}
}

// withLiveOdds adds the live eo_market lines to /odds: on the first page of
// ?match= they are the newest rows (the snapshot page is shortened so limit
// holds and the cursor stays exact); in the bulk snapshot they replace the
// series they supersede.
func (s *Server) withLiveOdds(h fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		l := s.live
		snap := snapOf(c)
		src := c.Query("source")
		if snap == nil || (src != "" && src != "eo_market") {
			return h(c)
		}
		matchQ := c.Query("match")
		if matchQ != "" {
			id, ok := ParseID(matchQ)
			mi, known := snap.matchByID[id]
			if !ok || !known || c.Query("cursor") != "" {
				return h(c)
			}
			l.mu.RLock()
			lines := l.liveLines(id)
			var rows [][]byte
			if len(lines) > 0 {
				limit := parseLimit(c, limOdds)
				if len(lines) >= limit {
					lines = lines[:limit-1]
				}
				rows = l.renderLines(snap, mi, lines)
				if len(rows) > 0 {
					c.Request().URI().QueryArgs().Set("limit", strconv.Itoa(limit-len(rows)))
				}
			}
			l.mu.RUnlock()
			if err := h(c); err != nil || len(rows) == 0 || c.Response().StatusCode() != fiber.StatusOK {
				return err
			}
			var page struct {
				Data []json.RawMessage `json:"data"`
				Meta struct {
					NextCursor *string `json:"next_cursor"`
				} `json:"meta"`
			}
			if err := json.Unmarshal(c.Response().Body(), &page); err != nil {
				return err
			}
			for _, r := range page.Data {
				rows = append(rows, r)
			}
			next := ""
			if page.Meta.NextCursor != nil {
				next = *page.Meta.NextCursor
			}
			return sendList(c, rows, next)
		}
		if err := h(c); err != nil || c.Response().StatusCode() != fiber.StatusOK {
			return err
		}
		l.mu.RLock()
		defer l.mu.RUnlock()
		if len(l.odds) == 0 {
			return nil
		}
		var page struct {
			Data []json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(c.Response().Body(), &page); err != nil {
			return err
		}
		liveRows := map[string][]byte{}
		var keys []string
		for id := range l.odds {
			mi, ok := snap.matchByID[id]
			if !ok {
				continue
			}
			lines := l.liveLines(id)
			for i, r := range l.renderLines(snap, mi, lines) {
				k := lines[i].MarketID + "|" + lines[i].Outcome
				liveRows[k] = r
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		rows := make([][]byte, 0, len(page.Data)+len(keys))
		for _, r := range page.Data {
			var k snapshotSeries
			_ = json.Unmarshal(r, &k)
			if lr, ok := liveRows[k.MarketID+"|"+k.OutcomeKey]; ok && k.Source == "eo_market" {
				rows = append(rows, lr)
				delete(liveRows, k.MarketID+"|"+k.OutcomeKey)
				continue
			}
			rows = append(rows, r)
		}
		for _, k := range keys {
			if r, ok := liveRows[k]; ok {
				rows = append(rows, r)
			}
		}
		if limit := parseLimit(c, limOdds); len(rows) > limit {
			rows = rows[:limit]
		}
		return sendList(c, rows, "")
	}
}

// AttachFeed starts consuming f when the server was built without a feed
// (the embedded default creates its in-process feed once the edge runs).
func (s *Server) AttachFeed(ctx context.Context, f live.Feed) error {
	if s.live.running.Load() {
		return fmt.Errorf("edge: a live feed is already attached")
	}
	s.live.o.Feed = f
	return s.RunLive(ctx)
}

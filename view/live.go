package view

import (
	"bytes"
	"encoding/json"
	"sort"
	"time"

	"github.com/eodata/eo/market"
	"github.com/eodata/eo/tables"
)

// Live changes: the live path (live.Tracker) turns feed events into
// Changes in service ids, and View.Apply folds a batch of them into a new
// View. The view keeps the newest state of each touched match and every
// live eo_market line since the snapshot, and derives from them, once per
// batch, everything a request reads: the touched rows' JSON, their maps and
// latest odds, their status index entries, the open-market odds list and
// the coverage shares. Requests only pick pre-rendered bytes.

// MatchState is a match's whole live state at one instant (a score event
// carries the whole state, so applying one is idempotent).
type MatchState struct {
	ID         tables.ID
	Status     string // scheduled, live, completed, cancelled
	ScoreA     *int   // maps won
	ScoreB     *int
	ResultType *string
	LiveState  json.RawMessage // the map in play (live only)
	// Maps are the series' finished maps, in order; the map in play is in
	// LiveState.
	Maps      []MapScore
	ChangedAt time.Time
}

// MapScore is a finished map of a live or just-finished series.
type MapScore struct {
	Number                   int
	Name                     string
	ScoreA, ScoreB           int
	FirstHalfA, FirstHalfB   *int
	SecondHalfA, SecondHalfB *int
	OvertimeA, OvertimeB     *int
	FirstHalfSideA           string // t or ct; "" unknown
	StartedAt                time.Time
}

// LiveLine is a live eo_market line (the live aggregator's output): the
// same id, market id and price the batch pipeline mints for the same
// captures.
type LiveLine struct {
	ID, MarketID, MatchID tables.ID
	Market                string // match_winner, map_winner, total_maps, map_handicap
	MapNumber             int    // 0: none
	Line                  *float64
	Outcome               string
	Price                 float64
	BookCount             int
	CapturedAt            time.Time
	// Retract withdraws the line with this id (its instant, evaluated again
	// with more captures, no longer changes the price).
	Retract bool
}

// Changes is one batch of live changes.
type Changes struct {
	Matches []MatchState
	Lines   []LiveLine
}

// Applied says what a batch changed, for the WebSocket updates.
type Applied struct {
	// Matches whose row or maps changed (status, scores, live state, maps,
	// data_available), in the order of the batch.
	Matches []tables.ID
	// Odds are the matches with new lines and those lines, rendered as a
	// JSON array of OddsLine rows.
	Odds []OddsUpdate
	// Skipped counts changes not applied: unknown match, or not newer than
	// what the view holds (the snapshot already has it, or out of order).
	Skipped int
	// Withheld counts live lines not applied because they count fewer
	// books than the snapshot's line of their series (Snapshot.supersedes).
	Withheld int
}

// OddsUpdate is one match's new live lines.
type OddsUpdate struct {
	Match tables.ID
	Lines []byte
}

// delta is the live part of a View. The accumulated state (matches, lines)
// survives a snapshot swap minus what the new snapshot holds; the rest is
// derived from it against the base.
type delta struct {
	version uint64
	matches map[tables.ID]*liveMatch
	lines   map[tables.ID][]*liveLine // per match, ascending (captured_at, id)

	over    map[int32]*overlay // base match index -> effective state
	touched []uint64           // bitset of base match indexes with an overlay
	// statusIn: per status, the overlaid matches whose live status differs
	// from their snapshot status, in match order, merged into that status's
	// index at query time.
	statusIn  map[string]*order
	bulk      *bulkList // open-market latest lines; nil: the base's
	coverage  []byte    // nil: the base's
	covCounts coverageCounts
}

var emptyDelta = &delta{}

type liveMatch struct {
	MatchState
	startedAt time.Time // first live or completed state seen
}

type liveLine struct {
	LiveLine
	at   int64   // captured_at, unix microseconds
	open float64 // the open price json was rendered with
	json []byte
}

// overlay is a touched match as the view serves it.
type overlay struct {
	m      Match // effective row: status, scores, live state, maps and odds flags
	detail []byte
	list   []byte
	maps   tables.Array
	heads  []seriesHead // newest line per series, reading order
	hist   *order       // live lines newest first (idx into histLines)
	lines  []*liveLine  // hist's rows
}

type bulkList struct {
	json   [][]byte
	source []string
	tour   []int32
}

func (d *delta) clone() *delta {
	n := &delta{version: d.version + 1, matches: make(map[tables.ID]*liveMatch, len(d.matches)+4),
		lines: make(map[tables.ID][]*liveLine, len(d.lines)+4), over: make(map[int32]*overlay, len(d.over)+4),
		touched: append([]uint64(nil), d.touched...), statusIn: d.statusIn, bulk: d.bulk, coverage: d.coverage,
		covCounts: d.covCounts}
	for k, v := range d.matches {
		n.matches[k] = v
	}
	for k, v := range d.lines {
		n.lines[k] = v
	}
	for k, v := range d.over {
		n.over[k] = v
	}
	return n
}

func (d *delta) mark(mi int32, nMatches int) {
	if d.touched == nil {
		d.touched = make([]uint64, (nMatches+63)/64)
	}
	d.touched[mi>>6] |= 1 << (uint(mi) & 63)
}

// overlayOf returns match mi's live state, nil when it has none: one bit
// test for the untouched rows of a page.
func (v *View) overlayOf(mi int32) *overlay {
	t := v.d.touched
	if w := int(mi >> 6); w >= len(t) || t[w]&(1<<(uint(mi)&63)) == 0 {
		return nil
	}
	return v.d.over[mi]
}

// row returns match mi as the view serves it.
func (v *View) row(mi int32) *Match {
	if ov := v.overlayOf(mi); ov != nil {
		return &ov.m
	}
	return &v.base.matches[mi]
}

// Apply returns the view with a batch of live changes applied, and what
// changed. A match state is applied only when it is newer than the
// snapshot's newest event of the match and not older than the view's; a
// line only when it is newer than the snapshot's newest line of its series.
func (v *View) Apply(c Changes) (*View, Applied) {
	if len(c.Matches) == 0 && len(c.Lines) == 0 {
		return v, Applied{}
	}
	a := &applier{s: v.base, nd: v.d.clone(), seen: map[int32]bool{}, changed: map[series]bool{}}
	a.states(c.Matches)
	a.lines(c.Lines)
	a.render()
	if len(a.touched) == 0 {
		return v, a.ap
	}
	// The open-market list changes only with lines or with a match opening
	// or closing (most batches are a round's score: it is kept).
	bulk := len(a.order) > 0 || v.d.bulk == nil
	for _, mi := range a.touched {
		bulk = a.overlay(v, mi) || bulk
	}
	a.nd.derive(a.s, bulk)
	return &View{base: a.s, d: a.nd}, a.ap
}

// series is one odds series of a match.
type series struct {
	match   int32
	market  tables.ID
	outcome string
}

// applier holds one Apply's work: the new delta, the matches it touched and
// the series it changed, in the batch's order.
type applier struct {
	s       *Snapshot
	nd      *delta
	ap      Applied
	seen    map[int32]bool
	touched []int32
	changed map[series]bool
	order   []series
}

func (a *applier) touch(mi int32) {
	if !a.seen[mi] {
		a.seen[mi] = true
		a.touched = append(a.touched, mi)
	}
}

// states applies the match states that are newer than what the snapshot and
// the view hold.
func (a *applier) states(states []MatchState) {
	for _, st := range states {
		mi, ok := a.s.matchByID[st.ID]
		// An event as old as the snapshot's newest of the match is applied
		// when the snapshot shows the match otherwise: of two equal times
		// the batch keeps the later-landed, and the live path receives what
		// the lander lands, in that order.
		if !ok {
			a.ap.Skipped++
			continue
		}
		if t := st.ChangedAt.UnixMicro(); t < a.s.lastEvent[mi] || (t == a.s.lastEvent[mi] && a.s.holds(mi, &st)) {
			a.ap.Skipped++
			continue
		}
		cur := a.nd.matches[st.ID]
		if cur != nil && st.ChangedAt.Before(cur.ChangedAt) {
			a.ap.Skipped++
			continue
		}
		lm := &liveMatch{MatchState: st}
		if cur != nil {
			lm.startedAt = cur.startedAt
		}
		if lm.startedAt.IsZero() && (st.Status == "live" || st.Status == "completed") {
			lm.startedAt = st.ChangedAt
		}
		a.nd.matches[st.ID] = lm
		a.touch(mi)
	}
}

// lines applies the lines newer than the snapshot's newest of their series.
func (a *applier) lines(lines []LiveLine) {
	for _, ln := range lines {
		mi, ok := a.s.matchByID[ln.MatchID]
		if !ok {
			a.ap.Skipped++
			continue
		}
		l := &liveLine{LiveLine: ln, at: ln.CapturedAt.UnixMicro()}
		switch a.s.supersedes(l) {
		case supersededByTime:
			a.ap.Skipped++ // the snapshot already has this series up to here
			continue
		case supersededByBooks:
			a.ap.Withheld++
			continue
		}
		// A line of an instant already held is replaced, or retracted: the
		// market was evaluated again at that instant with more of its
		// captures (they arrived in two batches), as the pipeline evaluates
		// it once with all of them.
		var ls []*liveLine
		if ln.Retract {
			ls, ok = removeLine(a.nd.lines[ln.MatchID], ln.ID)
		} else {
			ls, ok = upsertLine(a.nd.lines[ln.MatchID], l)
		}
		if !ok {
			a.ap.Skipped++
			continue
		}
		a.nd.lines[ln.MatchID] = ls
		a.touch(mi)
		k := series{mi, ln.MarketID, ln.Outcome}
		if !a.changed[k] {
			a.changed[k] = true
			a.order = append(a.order, k)
		}
	}
}

// render renders the changed series: a line's open price is the series'
// first (the snapshot's, or the first live line), so a line inserted before
// the others re-renders them. Lines are shared with older views: a
// re-rendered line is a new value.
func (a *applier) render() {
	for _, k := range a.order {
		id := a.s.matches[k.match].ID
		ls := a.nd.lines[id]
		open := -1.0
		for i, l := range ls {
			if l.MarketID != k.market || l.Outcome != k.outcome {
				continue
			}
			if open < 0 {
				open = seriesOpen(a.s, ls, l)
			}
			if l.json == nil || l.open != open {
				x := &liveLine{LiveLine: l.LiveLine, at: l.at}
				a.s.renderLine(x, open)
				ls[i] = x // ls is this view's own copy (upsertLine, removeLine)
			}
		}
	}
}

// overlay builds touched match mi's overlay, records the updates its
// subscribers get, and reports whether the match opened or closed (the
// open-market list then changes).
func (a *applier) overlay(v *View, mi int32) bool {
	s, nd := a.s, a.nd
	id := s.matches[mi].ID
	ov := s.buildOverlay(mi, nd.matches[id], nd.lines[id])
	nd.over[mi] = ov
	nd.mark(mi, len(s.matches))
	// The match frame changed (state, maps, or a flag the lines set): its
	// subscribers get an update.
	if !bytes.Equal(ov.detail, v.detailJSON(mi)) || !bytes.Equal(ov.maps.JSON, v.maps(mi).JSON) {
		a.ap.Matches = append(a.ap.Matches, id)
	}
	// Subscribers of the odds get each changed series' newest line (a late
	// line is history; after a retraction the newest is an earlier one, live
	// or the snapshot's).
	var rows [][]byte
	for _, k := range a.order {
		if k.match != mi {
			continue
		}
		for i := range ov.heads {
			if h := &ov.heads[i]; h.market == k.market && h.outcome == k.outcome && h.source == "eo_market" {
				rows = append(rows, s.odds.headBytes(h))
			}
		}
	}
	if len(rows) > 0 {
		a.ap.Odds = append(a.ap.Odds, OddsUpdate{Match: id, Lines: joinArray(rows)})
	}
	return closedStatus(ov.m.Status) != closedStatus(v.row(mi).Status)
}

// Rebase returns the view of a newly loaded snapshot with the live changes
// it does not hold yet: a match state is kept when it is newer than the new
// snapshot's newest event of the match (or as old, and the snapshot shows
// the match otherwise), a line when it is newer than the new snapshot's
// newest line of its series.
func (v *View) Rebase(next *Snapshot) *View {
	nd := &delta{version: v.d.version + 1, matches: map[tables.ID]*liveMatch{}, lines: map[tables.ID][]*liveLine{},
		over: map[int32]*overlay{}}
	keep := map[int32]bool{}
	for id, lm := range v.d.matches {
		mi, ok := next.matchByID[id]
		if !ok {
			continue
		}
		// A state as old as the snapshot's newest event is kept when the
		// snapshot shows something else: it holds an earlier event of that
		// instant, not this one (not landed yet).
		if t := lm.ChangedAt.UnixMicro(); t > next.lastEvent[mi] || (t == next.lastEvent[mi] && !next.holds(mi, &lm.MatchState)) {
			nd.matches[id] = lm
			keep[mi] = true
		}
	}
	for id, ls := range v.d.lines {
		mi, ok := next.matchByID[id]
		if !ok {
			continue
		}
		var kept []*liveLine
		for _, l := range ls {
			if next.supersedes(l) != 0 {
				continue
			}
			kept = append(kept, &liveLine{LiveLine: l.LiveLine, at: l.at})
		}
		for _, l := range kept { // open prices may come from the new snapshot now
			next.renderLine(l, seriesOpen(next, kept, l))
		}
		if len(kept) > 0 {
			nd.lines[id] = kept
			keep[mi] = true
		}
	}
	if len(keep) == 0 {
		return &View{base: next, d: &delta{version: nd.version}}
	}
	for mi := range keep {
		id := next.matches[mi].ID
		nd.over[mi] = next.buildOverlay(mi, nd.matches[id], nd.lines[id])
		nd.mark(mi, len(next.matches))
	}
	nd.derive(next, true)
	return &View{base: next, d: nd}
}

// holds reports whether match mi's row shows st's status, scores, result
// and live state: the snapshot holds st's event, or one of the same
// instant that says the same.
func (s *Snapshot) holds(mi int32, st *MatchState) bool {
	m := &s.matches[mi]
	return m.Status == st.Status && ptrEq(m.ScoreA, st.ScoreA) && ptrEq(m.ScoreB, st.ScoreB) &&
		ptrEq(m.ResultType, st.ResultType) && bytes.Equal(m.LiveState, st.LiveState)
}

func ptrEq[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// upsertLine adds l to a match's lines in (captured_at, id) order, or puts
// it in place of the line with its id when its price or book count differs;
// the slice is copied (older views still read the old one). ok is false
// when nothing changed.
func upsertLine(ls []*liveLine, l *liveLine) ([]*liveLine, bool) {
	i := sort.Search(len(ls), func(i int) bool {
		return ls[i].at > l.at || (ls[i].at == l.at && bytes.Compare(ls[i].ID[:], l.ID[:]) >= 0)
	})
	if i < len(ls) && ls[i].ID == l.ID {
		if ls[i].Price == l.Price && ls[i].BookCount == l.BookCount {
			return ls, false
		}
		out := append([]*liveLine(nil), ls...)
		out[i] = l
		return out, true
	}
	out := make([]*liveLine, 0, len(ls)+1)
	out = append(out, ls[:i]...)
	out = append(out, l)
	return append(out, ls[i:]...), true
}

// removeLine drops the line with id from a match's lines (a copy); false
// when it is not there.
func removeLine(ls []*liveLine, id tables.ID) ([]*liveLine, bool) {
	for i, l := range ls {
		if l.ID == id {
			out := make([]*liveLine, 0, len(ls)-1)
			out = append(out, ls[:i]...)
			return append(out, ls[i+1:]...), true
		}
	}
	return ls, false
}

// seriesOpen is a live line's open price: the snapshot's, or the first live
// price of its series.
func seriesOpen(s *Snapshot, ls []*liveLine, l *liveLine) float64 {
	if h := s.head(l.MatchID, l.MarketID, l.Outcome, "eo_market"); h != nil {
		return h.open
	}
	for _, x := range ls {
		if x.MarketID == l.MarketID && x.Outcome == l.Outcome {
			return x.Price
		}
	}
	return l.Price
}

// head finds a match's newest published line of one series.
func (s *Snapshot) head(match, market tables.ID, outcome, source string) *seriesHead {
	hs := s.odds.heads[match]
	for i := range hs {
		if h := &hs[i]; h.market == market && h.outcome == outcome && h.source == source {
			return h
		}
	}
	return nil
}

// Why a snapshot's line of a series makes a live line of it unservable.
const (
	supersededByTime  = 1 + iota // the snapshot has the series up to the live line's instant or later
	supersededByBooks            // the live line counts fewer books than the snapshot's
)

// supersedes says whether the snapshot's newest line of l's series makes
// l unservable (0: it does not). Book by book: a series' book_count never
// falls in the batch (a book that priced a market stays in it, its latest
// price as of each instant), so a live line that counts fewer books than
// the snapshot's is the median of only the books the edge has seen since
// it started (a restart, a new edge, a gap in the feed), not the market's.
// Served, it gave another price than the other edges and the next snapshot
// (with book_count 2 where they had 4). The snapshot's line is served until
// every book has priced again.
func (s *Snapshot) supersedes(l *liveLine) int {
	h := s.head(l.MatchID, l.MarketID, l.Outcome, "eo_market")
	if h == nil {
		return 0
	}
	if l.at <= h.at {
		return supersededByTime
	}
	if r := &s.odds.rows[h.row]; r.flags&hasBook != 0 && int32(l.BookCount) < r.book {
		return supersededByBooks
	}
	return 0
}

// renderLine renders a live line as the batch labels it
// (sql/derive/00_odds.sql).
func (s *Snapshot) renderLine(l *liveLine, open float64) {
	mi := s.matchByID[l.MatchID]
	m := &s.matches[mi]
	name := func(id tables.ID) string {
		if t := s.Team(id); t != nil {
			return t.Name
		}
		return ""
	}
	mid := l.MatchID
	bc := l.BookCount
	r := OddsLine{ID: l.ID, MatchID: &mid, MarketID: l.MarketID, Market: l.Market, Source: "eo_market",
		BookCount: &bc, OutcomeKey: l.Outcome, Price: l.Price, OpenPrice: open, DeltaSinceOpen: l.Price - open,
		CapturedAt: l.CapturedAt.UTC()}
	if l.MapNumber > 0 {
		n := l.MapNumber
		r.MapNumber = &n
	}
	lineV := 0.0
	if l.Line != nil {
		lineV = *l.Line
		r.Line = &lineV
	}
	team := m.TeamAID
	if l.Outcome == "away" {
		team = m.TeamBID
	}
	k := market.Key{Market: l.Market, MapNumber: l.MapNumber, Line: lineV, HasLine: l.Line != nil}
	r.Label = market.Label(k, l.Outcome, name(m.TeamAID), name(m.TeamBID))
	if l.Market != "total_maps" {
		pt := "team"
		r.ParticipantType = &pt
		r.ParticipantID = &team
	}
	l.open = open
	l.json = mustJSON(&r)
}

// buildOverlay renders match mi with its live state and live lines.
func (s *Snapshot) buildOverlay(mi int32, lm *liveMatch, lines []*liveLine) *overlay {
	ov := &overlay{m: s.matches[mi]}
	m := &ov.m
	d := s.data(m.ID)
	ov.maps = d.maps
	if lm != nil {
		applyState(m, lm)
		ov.maps = withLiveMaps(m.ID, d, lm.Maps)
	}
	m.HasMaps = ov.maps.N > 0
	m.DataAvailable.Maps = m.HasMaps

	ov.heads = s.odds.heads[m.ID]
	if len(lines) > 0 {
		m.HasOdds = true
		m.DataAvailable.Odds = true
		ov.heads = mergeHeads(ov.heads, lines)
		ov.lines = make([]*liveLine, len(lines))
		for i, l := range lines {
			ov.lines[len(lines)-1-i] = l // newest first
		}
		ov.hist = newOrder(OddsSpec, len(ov.lines), func(i int) tables.ID { return ov.lines[i].ID },
			func(i int) SortVal { return numVal(ov.lines[i].at) })
	}
	ov.detail = mustJSON(m)
	ov.list = renderListRow(m)
	return ov
}

// applyState sets a match row to a live state, by the rules the batch
// derives a row from its latest event (sql/derive/01_matches.sql).
func applyState(m *Match, lm *liveMatch) {
	started := m.StartedAt
	m.Status = lm.Status
	if lm.ChangedAt.After(m.ChangedAt) { // the row's own edits may be newer
		m.ChangedAt = lm.ChangedAt.UTC()
	}
	m.LiveState, m.ScoreA, m.ScoreB, m.StartedAt = nil, nil, nil, nil
	m.EndedAt, m.ResultKnownAt, m.WinnerTeamID, m.ResultType = nil, nil, nil, nil
	if lm.Status != "live" && lm.Status != "completed" {
		m.TimesEstimated = false
		return
	}
	a, b := ptrOr(lm.ScoreA, 0), ptrOr(lm.ScoreB, 0)
	m.ScoreA, m.ScoreB = &a, &b
	if started == nil && !lm.startedAt.IsZero() {
		t := lm.startedAt.UTC()
		started = &t
	}
	m.StartedAt = started
	if lm.Status == "live" {
		if len(lm.LiveState) > 0 {
			m.LiveState = lm.LiveState
		}
		return
	}
	// The live feed's times are its own: only a start the snapshot
	// estimated stays an estimate.
	t := lm.ChangedAt.UTC()
	m.EndedAt, m.ResultKnownAt = &t, &t
	switch {
	case a > b:
		w := m.TeamAID
		m.WinnerTeamID = &w
	case b > a:
		w := m.TeamBID
		m.WinnerTeamID = &w
	}
	rt := "played"
	if lm.ResultType != nil && *lm.ResultType != "" {
		rt = *lm.ResultType
	}
	m.ResultType = &rt
}

// row is the map result the batch derives from a finished live map
// (sql/normalise/02_tables.sql: status played, rounds_played the sum).
func (x *MapScore) row(match tables.ID) MapResult {
	r := MapResult{MatchID: match, MapNumber: x.Number, MapName: x.Name, ScoreA: x.ScoreA, ScoreB: x.ScoreB,
		FirstHalfA: x.FirstHalfA, FirstHalfB: x.FirstHalfB, SecondHalfA: x.SecondHalfA, SecondHalfB: x.SecondHalfB,
		OvertimeA: x.OvertimeA, OvertimeB: x.OvertimeB, Status: "played", RoundsPlayed: x.ScoreA + x.ScoreB}
	if x.FirstHalfSideA != "" {
		side := x.FirstHalfSideA
		r.FirstHalfSideA = &side
	}
	if !x.StartedAt.IsZero() {
		t := x.StartedAt.UTC()
		r.StartedAt = &t
	}
	return r
}

// withLiveMaps is a match's map results with the live path's finished maps
// after the snapshot's (a map the snapshot has keeps the snapshot's row).
func withLiveMaps(match tables.ID, d *matchData, live []MapScore) tables.Array {
	var rows [][]byte
	for i := range live {
		x := &live[i]
		if x.Number <= d.lastMap {
			continue
		}
		r := x.row(match)
		rows = append(rows, mustJSON(&r))
	}
	if len(rows) == 0 {
		return d.maps
	}
	b := make([]byte, 0, len(d.maps.JSON)+512*len(rows))
	if d.maps.JSON != nil {
		b = append(b, d.maps.JSON[:len(d.maps.JSON)-1]...)
		b = append(b, ',')
	} else {
		b = append(b, '[')
	}
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return tables.Array{JSON: append(b, ']'), N: d.maps.N + len(rows)}
}

// mergeHeads puts each series' newest live line in place of the snapshot's
// newest (or beside them, for a series the snapshot lacks).
func mergeHeads(base []seriesHead, lines []*liveLine) []seriesHead {
	out := append([]seriesHead(nil), base...)
	for _, l := range lines { // ascending: a later line replaces an earlier one
		i := -1
		for j := range out {
			if out[j].market == l.MarketID && out[j].outcome == l.Outcome && out[j].source == "eo_market" {
				i = j
				break
			}
		}
		h := seriesHead{market: l.MarketID, outcome: l.Outcome, source: "eo_market", kind: l.Market,
			mapNum: l.MapNumber, line: ptrOr(l.Line, 0), open: l.Price, at: l.at, id: l.ID, json: l.json, row: -1}
		if i < 0 {
			out = append(out, h)
			continue
		}
		h.open, h.settled = out[i].open, out[i].settled
		out[i] = h
	}
	sortHeads(out)
	return out
}

// derive rebuilds what depends on every overlay: the status index entries,
// the coverage shares (rendered again only when a count moved) and, with
// bulk, the open-market odds list.
func (d *delta) derive(s *Snapshot, bulk bool) {
	moved := map[string][]int32{}
	cov := s.coverage
	for mi, ov := range d.over {
		if st := ov.m.Status; st != s.matches[mi].Status {
			moved[st] = append(moved[st], mi)
		}
		cov.add(&s.matches[mi], -1)
		cov.add(&ov.m, 1)
	}
	d.statusIn = make(map[string]*order, len(moved))
	for st, idx := range moved {
		d.statusIn[st] = newOrderOf(MatchSorts.Def, idx, func(i int32) tables.ID { return s.matches[i].ID },
			func(i int32) SortVal { return numVal(s.matches[i].ScheduledAt.UnixMicro()) })
	}
	if d.coverage == nil || cov != d.covCounts {
		d.coverage = renderCoverage(cov, s.modelGatePassed())
	}
	d.covCounts = cov
	if bulk {
		d.bulk = d.openLines(s)
	}
}

// openLines merges the snapshot's open-market lines of untouched matches
// with the touched matches' newest lines of their open markets, newest
// first.
func (d *delta) openLines(s *Snapshot) *bulkList {
	x := s.odds
	type liveRow struct {
		key    Key
		json   []byte
		source string
	}
	var add []liveRow
	for _, ov := range d.over {
		if closedStatus(ov.m.Status) {
			continue
		}
		for i := range ov.heads {
			h := &ov.heads[i]
			if !h.settled {
				add = append(add, liveRow{Key{numVal(h.at), h.id}, x.headBytes(h), h.source})
			}
		}
	}
	desc := order{desc: true}
	sort.Slice(add, func(i, j int) bool {
		return desc.cmpKey(add[i].key.Val, add[i].key.ID, add[j].key.Val, add[j].key.ID) < 0
	})
	b := &bulkList{}
	push := func(js []byte, src string, tour int32) {
		b.json = append(b.json, js)
		b.source = append(b.source, src)
		b.tour = append(b.tour, tour)
	}
	j := 0
	for k, i := range x.open {
		if mi := x.openMatch[k]; mi >= 0 && d.over[mi] != nil {
			continue
		}
		for ; j < len(add) && desc.cmpKey(add[j].key.Val, add[j].key.ID, x.openKey[k].Val, x.openKey[k].ID) < 0; j++ {
			push(add[j].json, add[j].source, -1)
		}
		push(x.openJSON[k], x.sources[x.src[i]], x.openTour[k])
	}
	for ; j < len(add); j++ {
		push(add[j].json, add[j].source, -1)
	}
	return b
}

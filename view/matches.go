package view

import (
	"bytes"
	"math"
	"sort"
	"time"

	"github.com/eodata/eo/tables"
)

// Has is a set of data_available keys a match must have (?has=).
type Has uint8

// The ?has= keys.
const (
	HasMaps Has = 1 << iota
	HasStats
	HasVetoes
	HasRounds
	HasDepth
)

// HasKeys maps each ?has= key to its flag.
var HasKeys = map[string]Has{"maps": HasMaps, "stats": HasStats, "vetoes": HasVetoes, "rounds": HasRounds, "depth": HasDepth}

// IncludeKeys are the accepted ?include= keys of match detail, in the order
// the error message lists them.
var IncludeKeys = []string{"teams", "tournament", "odds", "maps", "stats", "vetoes", "rounds", "lineups"}

// MatchFilter is /matches' filters, combined with AND; zero fields do not
// filter.
type MatchFilter struct {
	Status     AnyOf
	Tournament AnyID
	Team       AnyID     // either side
	From       time.Time // scheduled_at at or after (zero: unbounded)
	Until      time.Time // scheduled_at before (zero: unbounded)
	Has        Has
}

func (f *MatchFilter) keep(m *Match) bool {
	if !f.Status.Has(m.Status) || !f.Tournament.Has(m.TournamentID) {
		return false
	}
	if len(f.Team) > 0 && !f.Team.Has(m.TeamAID) && !f.Team.Has(m.TeamBID) {
		return false
	}
	if !f.Until.IsZero() && !m.ScheduledAt.Before(f.Until) {
		return false
	}
	if h := f.Has; h != 0 {
		if h&HasMaps != 0 && !m.HasMaps || h&HasStats != 0 && !m.HasStats || h&HasVetoes != 0 && !m.HasVetoes ||
			h&HasRounds != 0 && !m.HasRounds || h&HasDepth != 0 && !m.HasDepth {
			return false
		}
	}
	return true
}

// merged walks two orders of the same spec as one (an index and the live
// entries that joined it). b may be nil.
type merged struct {
	a, b *order
	i, j int
}

func newMerged(a, b *order, after *Key) merged {
	w := merged{a: a, b: b}
	if after != nil {
		if a != nil {
			w.i = a.after(after.Val, after.ID)
		}
		if b != nil {
			w.j = b.after(after.Val, after.ID)
		}
	}
	return w
}

// skipTo moves both positions to the first row whose value is below bound
// (a descending numeric order: rows scheduled before a date).
func (w *merged) skipBelow(bound int64) {
	for _, p := range []struct {
		o   *order
		pos *int
	}{{w.a, &w.i}, {w.b, &w.j}} {
		if p.o == nil {
			continue
		}
		o := p.o
		if q := sort.Search(len(o.idx), func(i int) bool { return o.vals[i].Num < bound }); q > *p.pos {
			*p.pos = q
		}
	}
}

// next returns the next row's order and position (ok false at the end).
func (w *merged) next() (*order, int, bool) {
	inA := w.a != nil && w.i < len(w.a.idx)
	inB := w.b != nil && w.j < len(w.b.idx)
	switch {
	case inA && (!inB || w.a.cmpKey(w.a.vals[w.i], w.a.ids[w.i], w.b.vals[w.j], w.b.ids[w.j]) < 0):
		w.i++
		return w.a, w.i - 1, true
	case inB:
		w.j++
		return w.b, w.j - 1, true
	}
	return nil, 0, false
}

// MatchPage is one page of /matches (scheduled_at desc, id desc) after a
// cursor's key. Filters read the view's rows, live changes included: a
// match that went live since the snapshot is in ?status=live and not in
// ?status=scheduled.
func (v *View) MatchPage(f MatchFilter, after *Key, limit int) Page {
	s := v.base
	ord, extra := s.matchOrder, (*order)(nil)
	if len(f.Status) == 1 {
		ord, extra = s.matchesByStat[f.Status[0]], v.d.statusIn[f.Status[0]]
	}
	// Tournament and team never change live: their index is exact, and a
	// smaller one than the status index (with its live entries) is walked
	// instead, the status checked on each row. A filter of several values
	// walks the narrowest index it has, or every match, and checks each.
	narrow := func(o *order) {
		if n := len(ord.idxOrNil()) + len(extra.idxOrNil()); o == nil || len(o.idx) < n {
			ord, extra = o, nil
		}
	}
	if len(f.Tournament) == 1 {
		narrow(s.matchesByTour[f.Tournament[0]])
	}
	if len(f.Team) == 1 {
		narrow(s.matchesByTeam[f.Team[0]])
	}
	if ord == nil && extra == nil {
		return Page{Spec: MatchSorts.Def}
	}
	w := newMerged(ord, extra, after)
	if !f.Until.IsZero() {
		// The order is scheduled_at descending: seek past the window's end
		// so the walk starts inside it, and stop once it passes its start.
		w.skipBelow(f.Until.UnixMicro())
	}
	p := newPage(MatchSorts.Def)
	for {
		o, pos, ok := w.next()
		if !ok {
			break
		}
		mi := o.idx[pos]
		m := v.row(mi)
		if !f.From.IsZero() && m.ScheduledAt.Before(f.From) {
			break
		}
		if !f.keep(m) {
			continue
		}
		if len(p.Rows) == limit {
			p.More = true
			break
		}
		p.Rows = append(p.Rows, v.listJSON(mi))
		p.Last = Key{Val: o.vals[pos], ID: o.ids[pos]}
	}
	if !p.More {
		p.Last = Key{}
	}
	return p
}

func (o *order) idxOrNil() []int32 {
	if o == nil {
		return nil
	}
	return o.idx
}

func (v *View) listJSON(mi int32) []byte {
	if ov := v.overlayOf(mi); ov != nil {
		return ov.list
	}
	return v.base.matchListJSON[mi]
}

func (v *View) detailJSON(mi int32) []byte {
	if ov := v.overlayOf(mi); ov != nil {
		return ov.detail
	}
	return v.base.matchJSON[mi]
}

// Match returns a match's row as the view serves it (read-only).
func (v *View) Match(id tables.ID) (*Match, bool) {
	mi, ok := v.base.matchByID[id]
	if !ok {
		return nil, false
	}
	return v.row(mi), true
}

// HasMatch reports whether the match exists.
func (v *View) HasMatch(id tables.ID) bool {
	_, ok := v.base.matchByID[id]
	return ok
}

// AppendMatch appends match detail (the Match object, with the sub-objects
// of include in the order given, each once) to dst; false when the match
// is unknown. include must hold IncludeKeys only.
func (v *View) AppendMatch(dst []byte, id tables.ID, include []string, now time.Time) ([]byte, bool) {
	mi, ok := v.base.matchByID[id]
	if !ok {
		return dst, false
	}
	base := v.detailJSON(mi)
	if len(include) == 0 {
		return append(dst, base...), true
	}
	s := v.base
	m := v.row(mi)
	d := s.data(id)
	dst = append(dst, base[:len(base)-1]...)
	var seen uint16
	for _, k := range include {
		bit := uint16(1) << includeIndex(k)
		if seen&bit != 0 {
			continue
		}
		seen |= bit
		dst = append(dst, `,"`...)
		dst = append(dst, k...)
		dst = append(dst, `":`...)
		switch k {
		case "teams":
			dst = append(dst, `{"team_a":`...)
			dst = s.appendTeam(dst, m.TeamAID)
			dst = append(dst, `,"team_b":`...)
			dst = s.appendTeam(dst, m.TeamBID)
			dst = append(dst, '}')
		case "tournament":
			if ti, ok := s.tournamentIdx.byID[m.TournamentID]; ok {
				dst = s.appendTournament(dst, ti, now)
			} else {
				dst = append(dst, "null"...)
			}
		case "odds":
			dst = v.base.odds.appendHeads(dst, v.heads(mi))
		case "maps":
			dst = append(dst, tables.OrEmpty(v.maps(mi).JSON)...)
		case "stats":
			dst = d.stats.AppendTo(dst, "[]")
		case "vetoes":
			dst = d.vetoes.AppendTo(dst, "[]")
		case "rounds":
			dst = d.rounds.AppendTo(dst, "[]")
		case "lineups":
			dst = d.lineups.AppendTo(dst, "[]")
		}
	}
	return append(dst, '}'), true
}

func includeIndex(k string) int {
	for i, x := range IncludeKeys {
		if x == k {
			return i
		}
	}
	return len(IncludeKeys)
}

func (s *Snapshot) appendTeam(b []byte, id tables.ID) []byte {
	if ti, ok := s.teamIdx.byID[id]; ok {
		return append(b, s.teamJSON[ti]...)
	}
	return append(b, "null"...)
}

func (v *View) heads(mi int32) []seriesHead {
	if ov := v.overlayOf(mi); ov != nil {
		return ov.heads
	}
	return v.base.odds.heads[v.base.matches[mi].ID]
}

func (v *View) maps(mi int32) tables.Array {
	if ov := v.overlayOf(mi); ov != nil {
		return ov.maps
	}
	return v.base.data(v.base.matches[mi].ID).maps
}

func (x *oddsIndex) appendHeads(dst []byte, hs []seriesHead) []byte {
	dst = append(dst, '[')
	for i := range hs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = x.headJSON(dst, &hs[i])
	}
	return append(dst, ']')
}

// MatchMaps is a match's map results, live maps included (a well-formed
// unknown id has none).
func (v *View) MatchMaps(id tables.ID) tables.Array {
	if mi, ok := v.base.matchByID[id]; ok {
		return v.maps(mi)
	}
	return tables.Array{}
}

// MatchStats is a match's player stat lines.
func (v *View) MatchStats(id tables.ID) tables.Packed { return v.base.data(id).stats }

// MatchVetoes is a match's veto steps.
func (v *View) MatchVetoes(id tables.ID) tables.Packed { return v.base.data(id).vetoes }

// MatchRounds is a match's round rows (compressed).
func (v *View) MatchRounds(id tables.ID) tables.Packed { return v.base.data(id).rounds }

// MatchDepth is a match's depth object (compressed; none: EmptyDepth).
func (v *View) MatchDepth(id tables.ID) tables.Packed { return v.base.data(id).depth }

// MatchLineups is a match's lineups.
func (v *View) MatchLineups(id tables.ID) tables.Packed { return v.base.data(id).lineups }

// MatchHistory is a match's status and score changes in the snapshot.
func (v *View) MatchHistory(id tables.ID) tables.Packed { return v.base.data(id).history }

// MatchStreams is a match's streams.
func (v *View) MatchStreams(id tables.ID) tables.Packed { return v.base.data(id).streams }

// AppendMatchFrame appends a WebSocket match frame's data: the match as
// GET /matches/{id}?include=maps serves it at this instant.
func (v *View) AppendMatchFrame(dst []byte, id tables.ID) ([]byte, bool) {
	return v.AppendMatch(dst, id, []string{"maps"}, time.Time{})
}

// AppendOddsFrame appends a WebSocket odds frame's data: the match's
// latest line per series, as include=odds serves it at this instant.
func (v *View) AppendOddsFrame(dst []byte, id tables.ID) ([]byte, bool) {
	mi, ok := v.base.matchByID[id]
	if !ok {
		return dst, false
	}
	return v.base.odds.appendHeads(dst, v.heads(mi)), true
}

// HeadToHead is the /teams/{id}/head-to-head object: the completed matches
// between two teams (the view's rows, live completions included).
type HeadToHead struct {
	TeamID      tables.ID `json:"team_id"`
	OpponentID  tables.ID `json:"opponent_id"`
	Matches     int       `json:"matches"`
	Wins        int       `json:"wins"`
	Losses      int       `json:"losses"`
	MapsWon     int       `json:"maps_won"`
	MapsLost    int       `json:"maps_lost"`
	WinPct      *float64  `json:"win_pct"`
	LastMatchAt *string   `json:"last_match_at"`
}

const h2hRecent = 10

// HeadToHead renders the head-to-head object of team against opp.
func (v *View) HeadToHead(team, opp tables.ID) []byte {
	h := HeadToHead{TeamID: team, OpponentID: opp}
	var recent [][]byte
	if o := v.base.matchesByTeam[team]; o != nil {
		for _, x := range o.idx {
			m := v.row(x)
			if !(m.TeamAID == opp || m.TeamBID == opp) || m.Status != "completed" || m.WinnerTeamID == nil {
				continue
			}
			h.Matches++
			// A completed match can lack a score (imported results that
			// name only the winner): it counts as a win or loss, not maps.
			if m.ScoreA != nil && m.ScoreB != nil {
				own, other := *m.ScoreA, *m.ScoreB
				if m.TeamBID == team {
					own, other = other, own
				}
				h.MapsWon += own
				h.MapsLost += other
			}
			if *m.WinnerTeamID == team {
				h.Wins++
			} else {
				h.Losses++
			}
			if h.LastMatchAt == nil {
				t := m.ScheduledAt.Format("2006-01-02T15:04:05Z07:00")
				h.LastMatchAt = &t
			}
			if len(recent) < h2hRecent {
				recent = append(recent, v.listJSON(x))
			}
		}
	}
	h.WinPct = pct(h.Wins, h.Matches)
	b := mustJSON(h)
	b = append(b[:len(b)-1], `,"recent_matches":`...)
	b = append(b, joinArray(recent)...)
	return append(b, '}')
}

// ---- odds

// OddsBulk is /odds without ?match=: the latest line per (market, outcome,
// line, source) of every open market, newest first, truncated to limit. A
// market is open while its match is neither completed nor cancelled in the
// view and no line of it is settled; an outright while its tournament is
// not finished at now.
func (v *View) OddsBulk(source string, limit int, now time.Time) [][]byte {
	s := v.base
	x := s.odds
	var rows [][]byte
	var finished map[int32]bool
	done := func(ti int32) bool {
		if ti < 0 {
			return false
		}
		if finished == nil {
			finished = map[int32]bool{}
		}
		d, seen := finished[ti]
		if !seen {
			d = s.tournaments[ti].Status(now) == "finished"
			finished[ti] = d
		}
		return d
	}
	if b := v.d.bulk; b != nil {
		for i, js := range b.json {
			if len(rows) == limit {
				break
			}
			if (source != "" && b.source[i] != source) || done(b.tour[i]) {
				continue
			}
			rows = append(rows, js)
		}
		return rows
	}
	for j, i := range x.open {
		if len(rows) == limit {
			break
		}
		if (source != "" && x.sources[x.src[i]] != source) || done(x.openTour[j]) {
			continue
		}
		rows = append(rows, x.openJSON[j])
	}
	return rows
}

// OddsPage is /odds?match=: the match's lines newest first (captured_at
// desc, id desc), live lines included, keyset-paged after a cursor's key.
func (v *View) OddsPage(match tables.ID, source string, after *Key, limit int) Page {
	s := v.base
	x := s.odds
	var live *overlay
	if mi, ok := s.matchByID[match]; ok {
		live = v.overlayOf(mi)
	}
	var lo *order
	if live != nil && (source == "" || source == "eo_market") {
		lo = live.hist
	}
	w := newMerged(x.byMatch[match], lo, after)
	p := newPage(OddsSpec)
	p.arena = arenas.Get().(*[]byte)
	buf := (*p.arena)[:0]
	for {
		o, pos, ok := w.next()
		if !ok {
			break
		}
		i := o.idx[pos]
		var row []byte
		if o == lo {
			row = live.lines[i].json
		} else {
			if source != "" && x.sources[x.src[i]] != source {
				continue
			}
			if len(p.Rows) < limit {
				// Rows rendered earlier keep pointing at the arena's
				// old array when an append moves it; those bytes stay.
				start := len(buf)
				buf = x.appendLine(buf, i)
				row = buf[start:len(buf):len(buf)]
			}
		}
		if len(p.Rows) == limit {
			p.More = true
			break
		}
		p.Rows = append(p.Rows, row)
		p.Last = Key{Val: o.vals[pos], ID: o.ids[pos]}
	}
	*p.arena = buf[:0]
	if !p.More {
		p.Last = Key{}
	}
	return p
}

// ---- the local replay

// Candidate is a match the local replay may play.
type Candidate struct {
	ID          tables.ID
	UpstreamID  string
	Format      string // bo1, bo3, bo5
	Status      string // live or scheduled
	ScheduledAt time.Time
	ScoreA      int
	ScoreB      int
	// Maps are the finished maps of a live match, as the view serves them.
	Maps []MapResult
}

// ReplayCandidates lists the matches a replay can play, best first: every
// live match, then scheduled ones by scheduled_at; only matches with an
// upstream id (events carry upstream ids), up to n after skipping those
// skip reports.
func (v *View) ReplayCandidates(n int, skip func(upstream string) bool) []Candidate {
	s := v.base
	var liveOnes, sched []int32
	for i := range s.matches {
		switch v.row(int32(i)).Status {
		case "live":
			liveOnes = append(liveOnes, int32(i))
		case "scheduled":
			sched = append(sched, int32(i))
		}
	}
	sort.Slice(sched, func(a, b int) bool {
		ma, mb := &s.matches[sched[a]], &s.matches[sched[b]]
		if !ma.ScheduledAt.Equal(mb.ScheduledAt) {
			return ma.ScheduledAt.Before(mb.ScheduledAt)
		}
		return bytes.Compare(ma.ID[:], mb.ID[:]) < 0
	})
	var out []Candidate
	for _, i := range append(liveOnes, sched...) {
		if len(out) == n {
			break
		}
		m := v.row(i)
		up := s.upstreamOf[m.ID]
		if up == "" || (skip != nil && skip(up)) {
			continue
		}
		c := Candidate{ID: m.ID, UpstreamID: up, Format: m.Format, Status: m.Status, ScheduledAt: m.ScheduledAt}
		if m.ScoreA != nil && m.ScoreB != nil {
			c.ScoreA, c.ScoreB = *m.ScoreA, *m.ScoreB
		}
		if m.Status == "live" {
			c.Maps = v.liveMaps(i)
		}
		out = append(out, c)
	}
	return out
}

// liveMaps is the finished maps of match mi as structs: the snapshot's,
// then the live path's.
func (v *View) liveMaps(mi int32) []MapResult {
	s := v.base
	id := s.matches[mi].ID
	out := append([]MapResult(nil), s.liveMapRows[id]...)
	ov := v.overlayOf(mi)
	if ov == nil {
		return out
	}
	lm := v.d.matches[id]
	if lm == nil {
		return out
	}
	last := s.data(id).lastMap
	for i := range lm.Maps {
		x := &lm.Maps[i]
		if x.Number <= last {
			continue
		}
		out = append(out, x.row(id))
	}
	return out
}

// pct is num/den as a percentage with one decimal, nil when den is 0 (as
// the pipeline's eo_pct).
func pct(num, den int) *float64 {
	if den == 0 {
		return nil
	}
	v := math.Round(1000*float64(num)/float64(den)) / 10
	return &v
}

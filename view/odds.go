package view

import (
	"bytes"
	"sort"
)

// OddsSpec is the one order odds history pages in (newest first).
const OddsSpec = "-captured_at"

// OddsSources are the served odds sources.
var OddsSources = map[string]bool{"eo_market": true, "eo_model": true}

// seriesHead is the newest line of one (market, outcome, source) series of
// a match, with what a live line of the same series needs: the open price,
// and the fields that order a match's latest lines for reading.
type seriesHead struct {
	market  ID
	outcome string
	source  string
	kind    string // match_winner, map_handicap, ...
	mapNum  int
	line    float64
	open    float64
	at      int64 // captured_at of the newest line, unix microseconds
	id      ID    // the newest line's id
	settled bool  // the market has a settled line
	// json is the line pre-rendered (a live line, or the snapshot line of an
	// open market); nil: render the snapshot's row (oddsIndex.headJSON).
	json []byte
	row  int32
}

// oddsIndex is the snapshot's odds: every line compact (oddsrow.go) and
// rendered per request, each match's history in page order, each match's
// newest line per series and the latest lines of every open market
// pre-rendered (they are what match pages and the bulk /odds list read).
type oddsIndex struct {
	// src is each line's source as an index into sources (the history
	// filter); rows and strs are the lines themselves.
	src     []uint8
	sources []string
	rows    []oddsRow
	strs    *strTable
	byMatch map[ID]*order       // captured_at desc, id desc
	heads   map[ID][]seriesHead // match -> newest line per series, reading order
	// open: the latest line per (market, outcome, source) of every open
	// market, newest first (captured_at desc, id desc), and its JSON.
	// openTour is an outright's tournament index (-1 on match lines),
	// checked at request time; openMatch is a match line's match index
	// (-1 on outrights).
	open      []int32
	openJSON  [][]byte
	openTour  []int32
	openMatch []int32
	openKey   []Key
}

type seriesKey struct {
	market  ID
	outcome string
	source  string
}

// buildOdds indexes the lines; the matches and tournaments must be indexed.
func buildOdds(s *Snapshot, lines []OddsLine) *oddsIndex {
	x := &oddsIndex{src: make([]uint8, len(lines)), rows: make([]oddsRow, len(lines)), strs: newStrTable(),
		heads: map[ID][]seriesHead{}}
	srcCode := map[string]uint8{}
	for i := range lines {
		c, ok := srcCode[lines[i].Source]
		if !ok {
			c = uint8(len(x.sources))
			srcCode[lines[i].Source] = c
			x.sources = append(x.sources, lines[i].Source)
		}
		x.src[i] = c
	}
	// open price: the earliest row of each series; latest: the newest.
	first := map[seriesKey]int{}
	last := map[seriesKey]int{}
	settled := map[ID]bool{} // market -> any line settled
	for i := range lines {
		l := &lines[i]
		k := seriesKey{l.MarketID, l.OutcomeKey, l.Source}
		if j, ok := first[k]; !ok || before(l, &lines[j]) {
			first[k] = i
		}
		if j, ok := last[k]; !ok || before(&lines[j], l) {
			last[k] = i
		}
		if l.IsWinner != nil {
			settled[l.MarketID] = true
		}
	}
	for i := range lines {
		l := &lines[i]
		l.OpenPrice = lines[first[seriesKey{l.MarketID, l.OutcomeKey, l.Source}]].Price
		l.DeltaSinceOpen = l.Price - l.OpenPrice
		x.rows[i] = compactLine(x.strs, l)
	}

	// History per match, newest first.
	all := newOrder(OddsSpec, len(lines), func(i int) ID { return lines[i].ID },
		func(i int) SortVal { return numVal(lines[i].CapturedAt.UnixMicro()) })
	x.byMatch = partition(all, func(i int32) []ID {
		if m := lines[i].MatchID; m != nil {
			return []ID{*m}
		}
		return nil
	})

	// Latest per series: include=odds per match, and the open-market snapshot.
	latest := make([]int32, 0, len(last))
	for _, i := range last {
		latest = append(latest, int32(i))
	}
	sort.Slice(latest, func(a, b int) bool { return before(&lines[latest[b]], &lines[latest[a]]) })
	x.indexLatest(s, lines, latest, settled)
	x.strs.idx = nil // built: only the rendered strings are read from here on
	for id, hs := range x.heads {
		sortHeads(hs)
		x.heads[id] = append(make([]seriesHead, 0, len(hs)), hs...) // no unused capacity kept
	}
	return x
}

// indexLatest records the newest line of every series (latest, newest
// first): the heads of each match and the open-market list.
func (x *oddsIndex) indexLatest(s *Snapshot, lines []OddsLine, latest []int32, settled map[ID]bool) {
	// The heads outlive the rows: intern their strings, which would
	// otherwise pin the Parquet reader's column buffers.
	interned := map[string]string{}
	intern := func(v string) string {
		if w, ok := interned[v]; ok {
			return w
		}
		w := string([]byte(v))
		interned[w] = w
		return w
	}
	// The open markets' lines are pre-rendered into one buffer (bulk /odds
	// reads them on every request); the other heads render when asked.
	isOpen := make([]int32, len(latest)) // match index, or -1 - tournament index; 0: closed
	size := 0
	var scratch []byte
	for k, i := range latest {
		l := &lines[i]
		if settled[l.MarketID] {
			continue
		}
		if l.MatchID != nil {
			if mi, ok := s.matchByID[*l.MatchID]; ok && !closedStatus(s.matches[mi].Status) {
				isOpen[k] = mi + 1
			}
		} else if l.TournamentID != nil {
			if ti, ok := s.tournamentIdx.byID[*l.TournamentID]; ok {
				isOpen[k] = -1 - ti
			}
		}
		if isOpen[k] != 0 {
			scratch = x.appendLine(scratch[:0], i)
			size += len(scratch)
		}
	}
	arena := make([]byte, 0, size)
	for k, i := range latest {
		l := &lines[i]
		var js []byte
		if o := isOpen[k]; o != 0 {
			start := len(arena)
			arena = x.appendLine(arena, i)
			js = arena[start:len(arena):len(arena)]
			if o > 0 {
				x.addOpen(i, js, -1, o-1, l)
			} else {
				x.addOpen(i, js, -1-o, -1, l)
			}
		}
		if l.MatchID != nil {
			x.heads[*l.MatchID] = append(x.heads[*l.MatchID], seriesHead{market: l.MarketID, outcome: intern(l.OutcomeKey),
				source: intern(l.Source), kind: intern(l.Market), mapNum: ptrOr(l.MapNumber, 0), line: ptrOr(l.Line, 0),
				open: l.OpenPrice, at: l.CapturedAt.UnixMicro(), id: l.ID, settled: settled[l.MarketID], json: js, row: i})
		}
	}
}

// headJSON appends a series head's line.
func (x *oddsIndex) headJSON(dst []byte, h *seriesHead) []byte {
	if h.json != nil {
		return append(dst, h.json...)
	}
	return x.appendLine(dst, h.row)
}

// headBytes is a head's line as a slice of its own (rendered when the
// head is not pre-rendered): for the live path, which keeps it.
func (x *oddsIndex) headBytes(h *seriesHead) []byte {
	if h.json != nil {
		return h.json
	}
	return x.appendLine(nil, h.row)
}

func (x *oddsIndex) addOpen(i int32, js []byte, tour, match int32, l *OddsLine) {
	x.open = append(x.open, i)
	x.openJSON = append(x.openJSON, js)
	x.openTour = append(x.openTour, tour)
	x.openMatch = append(x.openMatch, match)
	x.openKey = append(x.openKey, Key{Val: numVal(l.CapturedAt.UnixMicro()), ID: l.ID})
}

// closedStatus: a completed or cancelled match has no open market.
func closedStatus(st string) bool { return st == "completed" || st == "cancelled" }

// before orders two lines by (captured_at, id) ascending.
func before(a, b *OddsLine) bool {
	if !a.CapturedAt.Equal(b.CapturedAt) {
		return a.CapturedAt.Before(b.CapturedAt)
	}
	return bytes.Compare(a.ID[:], b.ID[:]) < 0
}

var marketRank = map[string]int{"match_winner": 0, "map_handicap": 1, "total_maps": 2, "map_winner": 3, "outright": 4}

// sortHeads puts a match's latest lines in a stable reading order: market,
// map, line, outcome, source.
func sortHeads(hs []seriesHead) {
	sort.Slice(hs, func(i, j int) bool {
		a, b := &hs[i], &hs[j]
		if a.kind != b.kind {
			return marketRank[a.kind] < marketRank[b.kind]
		}
		if a.mapNum != b.mapNum {
			return a.mapNum < b.mapNum
		}
		if a.line != b.line {
			return a.line < b.line
		}
		if a.outcome != b.outcome {
			return a.outcome < b.outcome
		}
		return a.source < b.source
	})
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// OddsHistoryLen is the number of published lines of a match (its history
// without live lines).
func (s *Snapshot) OddsHistoryLen(match ID) int {
	if o := s.odds.byMatch[match]; o != nil {
		return len(o.idx)
	}
	return 0
}

// OddsMatches lists the matches that have published odds lines.
func (s *Snapshot) OddsMatches() []ID {
	out := make([]ID, 0, len(s.odds.byMatch))
	for id := range s.odds.byMatch {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i][:], out[j][:]) < 0 })
	return out
}

// OddsLinesJSON calls fn with every published line's JSON, in the order
// of the snapshot's file; the bytes are reused after fn returns.
func (s *Snapshot) OddsLinesJSON(fn func([]byte)) {
	var b []byte
	for i := range s.odds.rows {
		b = s.odds.appendLine(b[:0], int32(i))
		fn(b)
	}
}

package view

import (
	"bytes"
	"sort"
	"sync"
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
	// closing: each completed match's closing lines, in reading order
	// (closing.go).
	closing map[ID][]int32
}

type seriesKey struct {
	market  ID
	outcome string
	source  string
}

// oddsSeries is one (market, outcome, source) series of lines: its rows, and
// its earliest and newest line (before).
type oddsSeries struct {
	rows        rowSet
	first, last int
}

// rowSet is the rows of a series: a run of consecutive rows, or any rows.
type rowSet interface{ all(yield func(int) bool) }

// seriesOf finds the series of the lines. The published file holds each
// series as one run of rows (odds_lines is ordered by match, market,
// source, outcome): the runs are found in one pass, with a map lookup a
// run rather than two a line. Lines in any other order (a table made by
// hand) are grouped through a map.
func seriesOf(lines []OddsLine) []oddsSeries {
	key := func(i int) seriesKey { l := &lines[i]; return seriesKey{l.MarketID, l.OutcomeKey, l.Source} }
	same := func(i, j int) bool {
		a, b := &lines[i], &lines[j]
		return a.MarketID == b.MarketID && a.OutcomeKey == b.OutcomeKey && a.Source == b.Source
	}
	var out []oddsSeries
	seen := map[seriesKey]bool{}
	for start := 0; start < len(lines); {
		end := start + 1
		for end < len(lines) && same(start, end) {
			end++
		}
		k := key(start)
		if seen[k] {
			return seriesByMap(lines, key)
		}
		seen[k] = true
		sr := oddsSeries{rows: run{start, end}, first: start, last: start}
		for i := start + 1; i < end; i++ {
			sr.widen(lines, i)
		}
		out = append(out, sr)
		start = end
	}
	return out
}

func seriesByMap(lines []OddsLine, key func(int) seriesKey) []oddsSeries {
	at := map[seriesKey]int{}
	var out []oddsSeries
	for i := range lines {
		k := key(i)
		j, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, oddsSeries{rows: &rowList{}, first: i, last: i})
			j = len(out) - 1
		} else {
			out[j].widen(lines, i)
		}
		rl := out[j].rows.(*rowList)
		*rl = append(*rl, i)
	}
	return out
}

func (sr *oddsSeries) widen(lines []OddsLine, i int) {
	if before(&lines[i], &lines[sr.first]) {
		sr.first = i
	}
	if before(&lines[sr.last], &lines[i]) {
		sr.last = i
	}
}

type run [2]int

func (r run) all(yield func(int) bool) {
	for i := r[0]; i < r[1] && yield(i); i++ {
	}
}

type rowList []int

func (r *rowList) all(yield func(int) bool) {
	for _, i := range *r {
		if !yield(i) {
			return
		}
	}
}

// oddsPrep is the part of the odds index that reads only the lines: Load
// makes it on the goroutine that read odds_lines, while other files are
// still read, and build finishes it with the indexes of matches and
// tournaments (buildOdds).
type oddsPrep struct {
	x       *oddsIndex
	latest  []int32     // the newest line of each series, newest first
	settled map[ID]bool // market -> any line settled
}

// prepareOdds compacts the lines, with their open prices, and orders each
// match's history (on a second goroutine when parallel).
func prepareOdds(lines []OddsLine, parallel bool) *oddsPrep {
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
	p := &oddsPrep{x: x, settled: map[ID]bool{}}
	for i := range lines {
		if lines[i].IsWinner != nil {
			p.settled[lines[i].MarketID] = true
		}
	}
	// History per match, newest first: it reads only ids and times, so it
	// is ordered on another goroutine while the series are found.
	var history sync.WaitGroup
	orderHistory := func() {
		x.byMatch = groupOrders(OddsSpec, len(lines), func(i int) (ID, bool) {
			if m := lines[i].MatchID; m != nil {
				return *m, true
			}
			return ID{}, false
		}, func(i int32) ID { return lines[i].ID }, func(i int32) SortVal { return numVal(lines[i].CapturedAt.UnixMicro()) })
	}
	if parallel {
		history.Go(orderHistory)
	} else {
		orderHistory()
	}
	// open price: the earliest row of each series; latest: the newest.
	ser := seriesOf(lines)
	for _, sr := range ser {
		for i := range sr.rows.all {
			l := &lines[i]
			l.OpenPrice = lines[sr.first].Price
			l.DeltaSinceOpen = l.Price - l.OpenPrice
			x.rows[i] = compactLine(x.strs, l)
		}
	}

	// Latest per series: include=odds per match, and the open-market snapshot.
	p.latest = make([]int32, 0, len(ser))
	for _, sr := range ser {
		p.latest = append(p.latest, int32(sr.last))
	}
	sort.Slice(p.latest, func(a, b int) bool { return before(&lines[p.latest[b]], &lines[p.latest[a]]) })
	history.Wait()
	return p
}

// buildOdds indexes the lines (prepared by prepareOdds, or here when p is
// nil); the matches and tournaments must be indexed.
func buildOdds(s *Snapshot, lines []OddsLine, p *oddsPrep) *oddsIndex {
	if p == nil {
		p = prepareOdds(lines, false)
	}
	x := p.x
	x.indexLatest(s, lines, p.latest, p.settled)
	x.indexClosing(s, lines)
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

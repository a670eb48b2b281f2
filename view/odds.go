package view

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/eodata/eo/tables"
)

// OddsSpec is the one order odds history pages in (newest first).
const OddsSpec = "-captured_at"

// OddsSources are the served odds sources.
var OddsSources = map[string]bool{"eo_market": true, "eo_model": true}

// seriesHead is the newest line of one (market, outcome, source) series of
// a match, with what a live line of the same series needs: the open price,
// and the fields that order a match's latest lines for reading.
type seriesHead struct {
	market  tables.ID
	outcome string
	source  string
	kind    string // match_winner, map_handicap, ...
	mapNum  int
	line    float64
	open    float64
	at      int64     // captured_at of the newest line, unix microseconds
	id      tables.ID // the newest line's id
	settled bool      // the market has a settled line
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
	byMatch map[tables.ID]*order       // captured_at desc, id desc
	heads   map[tables.ID][]seriesHead // match -> newest line per series, reading order
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
	closing map[tables.ID][]int32
}

type seriesKey struct {
	market          tables.ID
	outcome, source uint32 // strTable indexes
}

// oddsSeries is one (market, outcome, source) series of lines: its rows
// (the run start..end, or list when not a run), and its earliest and
// newest line (before).
type oddsSeries struct {
	start, end  int32
	list        []int32
	first, last int32
}

// all yields the series' rows.
func (sr *oddsSeries) all(yield func(int32) bool) {
	if sr.list != nil {
		for _, i := range sr.list {
			if !yield(i) {
				return
			}
		}
		return
	}
	for i := sr.start; i < sr.end && yield(i); i++ {
	}
}

// seriesOf finds the series of the rows. The published file holds each
// series as one run of rows (odds_lines is ordered by match, market,
// source, outcome): the runs are found in one pass, with a map lookup a
// run rather than two a line. Rows in any other order (a table made by
// hand) are grouped through a map.
func seriesOf(rows []oddsRow) []oddsSeries {
	key := func(i int32) seriesKey { r := &rows[i]; return seriesKey{r.market, r.outcome, r.source} }
	same := func(i, j int32) bool {
		a, b := &rows[i], &rows[j]
		return a.market == b.market && a.outcome == b.outcome && a.source == b.source
	}
	var out []oddsSeries
	seen := map[seriesKey]bool{}
	for start := int32(0); start < int32(len(rows)); {
		end := start + 1
		for end < int32(len(rows)) && same(start, end) {
			end++
		}
		k := key(start)
		if seen[k] {
			return seriesByMap(rows, key)
		}
		seen[k] = true
		sr := oddsSeries{start: start, end: end, first: start, last: start}
		for i := start + 1; i < end; i++ {
			sr.widen(rows, i)
		}
		out = append(out, sr)
		start = end
	}
	return out
}

func seriesByMap(rows []oddsRow, key func(int32) seriesKey) []oddsSeries {
	at := map[seriesKey]int{}
	var out []oddsSeries
	for i := range int32(len(rows)) {
		k := key(i)
		j, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, oddsSeries{first: i, last: i, list: []int32{}})
			j = len(out) - 1
		} else {
			out[j].widen(rows, i)
		}
		out[j].list = append(out[j].list, i)
	}
	return out
}

func (sr *oddsSeries) widen(rows []oddsRow, i int32) {
	if before(&rows[i], &rows[sr.first]) {
		sr.first = i
	}
	if before(&rows[sr.last], &rows[i]) {
		sr.last = i
	}
}

// oddsPrep is the part of the odds index that reads only the lines: Load
// makes it on the goroutine that read odds_lines, while other files are
// still read, and build finishes it with the indexes of matches and
// tournaments (buildOdds).
type oddsPrep struct {
	x       *oddsIndex
	latest  []int32            // the newest line of each series, newest first
	settled map[tables.ID]bool // market -> any line settled
}

// newOddsIndex is an index of n lines, to be compacted into its rows.
func newOddsIndex(n int) *oddsIndex {
	return &oddsIndex{rows: make([]oddsRow, n), strs: newStrTable(), heads: map[tables.ID][]seriesHead{}}
}

// readOdds reads odds_lines into a compact index, one row group at a time
// on workers goroutines: the lines, the snapshot's largest table, are never
// held whole as OddsLine (several times oddsRow's size, with pointers the
// collector scans), then prepares it (prepareRows).
func readOdds(ctx context.Context, path string, workers int) (_ *oddsPrep, err error) {
	defer tables.RecoverCorrupt(path, &err)
	pf, binds, err := tables.OpenFlat[OddsLine](path)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	if binds == nil {
		lines, err := tables.ReadArrow[OddsLine](ctx, pf, path)
		if err != nil {
			return nil, err
		}
		return prepareOdds(lines, workers > 1), nil
	}
	x := newOddsIndex(int(pf.NumRows()))
	err = tables.EachFlatGroup(ctx, path, pf, binds, workers, func() func(int, []OddsLine) error {
		c := x.strs.cache()
		return func(start int, lines []OddsLine) error {
			rows := x.rows[start : start+len(lines)]
			for i := range lines {
				rows[i] = compactLine(c, &lines[i])
			}
			return nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return prepareRows(x, workers > 1), nil
}

// prepareOdds compacts lines into a new index and prepares it, and gives
// the lines their open prices too (a table read through Arrow, or made by
// hand).
func prepareOdds(lines []OddsLine, parallel bool) *oddsPrep {
	x := newOddsIndex(len(lines))
	c := x.strs.cache()
	for i := range lines {
		x.rows[i] = compactLine(c, &lines[i])
	}
	p := prepareRows(x, parallel)
	for i := range lines {
		lines[i].OpenPrice = x.rows[i].open
		lines[i].DeltaSinceOpen = lines[i].Price - lines[i].OpenPrice
	}
	return p
}

// prepareRows gives every row its series' open price, codes the sources,
// finds the settled markets and the newest line of each series, and orders
// each match's history (on a second goroutine when parallel).
func prepareRows(x *oddsIndex, parallel bool) *oddsPrep {
	rows := x.rows
	x.src = make([]uint8, len(rows))
	srcCode := map[uint32]uint8{}
	p := &oddsPrep{x: x, settled: map[tables.ID]bool{}}
	for i := range rows {
		r := &rows[i]
		c, ok := srcCode[r.source]
		if !ok {
			c = uint8(len(x.sources))
			srcCode[r.source] = c
			x.sources = append(x.sources, x.strs.raw[r.source])
		}
		x.src[i] = c
		if r.flags&hasWinner != 0 {
			p.settled[r.market] = true
		}
	}
	// History per match, newest first: it reads only ids and times, so it
	// is ordered on another goroutine while the series are found.
	var history sync.WaitGroup
	orderHistory := func() {
		x.byMatch = groupOrders(OddsSpec, len(rows), func(i int) (tables.ID, bool) {
			return rows[i].match, rows[i].flags&hasMatch != 0
		}, func(i int32) tables.ID { return rows[i].id }, func(i int32) SortVal { return numVal(rows[i].micros()) })
	}
	if parallel {
		history.Go(orderHistory)
	} else {
		orderHistory()
	}
	// open price: the earliest row of each series; latest: the newest.
	ser := seriesOf(rows)
	p.latest = make([]int32, 0, len(ser))
	for k := range ser {
		sr := &ser[k]
		open := rows[sr.first].price
		for i := range sr.all {
			rows[i].open = open
		}
		p.latest = append(p.latest, sr.last)
	}
	sort.Slice(p.latest, func(a, b int) bool { return before(&rows[p.latest[b]], &rows[p.latest[a]]) })
	history.Wait()
	return p
}

// buildOdds indexes the lines prepared by prepareRows (none when p is
// nil); the matches and tournaments must be indexed.
func buildOdds(s *Snapshot, p *oddsPrep) *oddsIndex {
	if p == nil {
		p = prepareRows(newOddsIndex(0), false)
	}
	x := p.x
	x.indexLatest(s, p.latest, p.settled)
	x.indexClosing(s)
	x.strs.idx = nil // built: only the rendered strings are read from here on
	for id, hs := range x.heads {
		sortHeads(hs)
		x.heads[id] = append(make([]seriesHead, 0, len(hs)), hs...) // no unused capacity kept
	}
	return x
}

// indexLatest records the newest line of every series (latest, newest
// first): the heads of each match and the open-market list.
func (x *oddsIndex) indexLatest(s *Snapshot, latest []int32, settled map[tables.ID]bool) {
	// The open markets' lines are pre-rendered into one buffer (bulk /odds
	// reads them on every request); the other heads render when asked.
	isOpen := make([]int32, len(latest)) // match index, or -1 - tournament index; 0: closed
	size := 0
	var scratch []byte
	for k, i := range latest {
		r := &x.rows[i]
		if settled[r.market] {
			continue
		}
		if r.flags&hasMatch != 0 {
			if mi, ok := s.matchByID[r.match]; ok && !closedStatus(s.matches[mi].Status) {
				isOpen[k] = mi + 1
			}
		} else if r.flags&hasTour != 0 {
			if ti, ok := s.tournamentIdx.byID[r.tour]; ok {
				isOpen[k] = -1 - ti
			}
		}
		if isOpen[k] != 0 {
			scratch = x.appendLine(scratch[:0], i)
			size += len(scratch)
		}
	}
	arena := make([]byte, 0, size)
	// The heads' strings are the table's (copies made at load): they pin
	// no Parquet reader's buffers.
	str := x.strs.raw
	for k, i := range latest {
		r := &x.rows[i]
		var js []byte
		if o := isOpen[k]; o != 0 {
			start := len(arena)
			arena = x.appendLine(arena, i)
			js = arena[start:len(arena):len(arena)]
			if o > 0 {
				x.addOpen(i, js, -1, o-1)
			} else {
				x.addOpen(i, js, -1-o, -1)
			}
		}
		if r.flags&hasMatch != 0 {
			x.heads[r.match] = append(x.heads[r.match], seriesHead{market: r.market, outcome: str[r.outcome],
				source: str[r.source], kind: str[r.kind], mapNum: int(r.mapNum), line: r.line,
				open: r.open, at: r.micros(), id: r.id, settled: settled[r.market], json: js, row: i})
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

func (x *oddsIndex) addOpen(i int32, js []byte, tour, match int32) {
	x.open = append(x.open, i)
	x.openJSON = append(x.openJSON, js)
	x.openTour = append(x.openTour, tour)
	x.openMatch = append(x.openMatch, match)
	x.openKey = append(x.openKey, Key{Val: numVal(x.rows[i].micros()), ID: x.rows[i].id})
}

// closedStatus: a completed or cancelled match has no open market.
func closedStatus(st string) bool { return st == "completed" || st == "cancelled" }

// before orders two lines by (captured_at, id) ascending.
func before(a, b *oddsRow) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return bytes.Compare(a.id[:], b.id[:]) < 0
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
func (s *Snapshot) OddsHistoryLen(match tables.ID) int {
	if o := s.odds.byMatch[match]; o != nil {
		return len(o.idx)
	}
	return 0
}

// OddsMatches lists the matches that have published odds lines.
func (s *Snapshot) OddsMatches() []tables.ID {
	out := make([]tables.ID, 0, len(s.odds.byMatch))
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

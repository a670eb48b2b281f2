package edge

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/gofiber/fiber/v2"
)

// OddsLine is a row of odds_lines.parquet (sql/derive/00_odds.sql and
// 90_odds_lines.sql). open_price and delta_since_open are not stored: they
// are derived from the (market, outcome, source) series, which is immutable
// within a snapshot, so they are computed once at load.
type OddsLine struct {
	ID              ID        `col:"id" json:"id"`
	MatchID         *ID       `col:"match_id" json:"match_id"`
	TournamentID    *ID       `col:"tournament_id" json:"tournament_id"`
	MarketID        ID        `col:"market_id" json:"market_id"`
	Market          string    `col:"market" json:"market"`
	MapNumber       *int      `col:"map_number" json:"map_number"`
	Source          string    `col:"source" json:"source"`
	ModelVersion    *string   `col:"model_version" json:"model_version"`
	BookCount       *int      `col:"book_count" json:"book_count"`
	OutcomeKey      string    `col:"outcome_key" json:"outcome_key"`
	Label           string    `col:"label" json:"label"`
	ParticipantType *string   `col:"participant_type" json:"participant_type"`
	ParticipantID   *ID       `col:"participant_id" json:"participant_id"`
	Line            *float64  `col:"line" json:"line"`
	Price           float64   `col:"price" json:"price"`
	IsWinner        *bool     `col:"is_winner" json:"is_winner"`
	IsClosing       bool      `col:"is_closing" json:"is_closing"`
	OpenPrice       float64   `json:"open_price"`
	DeltaSinceOpen  float64   `json:"delta_since_open"`
	CapturedAt      time.Time `col:"captured_at" json:"captured_at"`
}

// oddsSpec is the one order odds history pages in (newest first).
const oddsSpec = "-captured_at"

// oddsIndex is the snapshot's odds: every line pre-rendered, each match's
// history in page order, each match's latest lines, and the bulk snapshot.
type oddsIndex struct {
	// src is each line's source as an index into sources; the rows
	// themselves are not kept once rendered (a 100k-match snapshot has
	// millions of lines).
	src     []uint8
	sources []string
	json    [][]byte
	byMatch map[ID]*order // captured_at desc, id desc
	latest  map[ID][]byte // match -> JSON array of its latest line per (market, outcome, source)
	// open: the latest line per (market, outcome, source) of every open
	// market, newest first (captured_at desc, id desc); tour is the outright's
	// tournament index (-1 on match lines), checked at request time.
	open     []int32
	openTour []int32
}

// readOddsLines reads odds_lines.parquet; a snapshot without the file (built
// before the odds steps) has no lines.
func readOddsLines(ctx context.Context, path string) ([]OddsLine, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return readParquet[OddsLine](ctx, path)
}

type seriesKey struct {
	market  ID
	outcome string
	source  string
}

// buildOdds indexes the lines; the matches and tournaments must be indexed.
func buildOdds(s *Snapshot, lines []OddsLine) *oddsIndex {
	x := &oddsIndex{src: make([]uint8, len(lines)), json: make([][]byte, len(lines)), latest: map[ID][]byte{}}
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
		x.json[i] = mustJSON(l)
	}

	// History per match, newest first.
	all := newOrder(oddsSpec, len(lines), func(i int) ID { return lines[i].ID },
		func(i int) sortVal { return numVal(lines[i].CapturedAt.UnixMicro()) })
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
	perMatch := map[ID][]int32{}
	for _, i := range latest {
		l := &lines[i]
		if l.MatchID != nil {
			perMatch[*l.MatchID] = append(perMatch[*l.MatchID], i)
			mi, ok := s.matchByID[*l.MatchID]
			if settled[l.MarketID] || !ok || s.matches[mi].Status == "completed" || s.matches[mi].Status == "cancelled" {
				continue
			}
			x.open = append(x.open, i)
			x.openTour = append(x.openTour, -1)
			continue
		}
		if l.TournamentID == nil || settled[l.MarketID] {
			continue
		}
		ti, ok := s.tournamentByID[*l.TournamentID]
		if !ok {
			continue
		}
		x.open = append(x.open, i)
		x.openTour = append(x.openTour, ti)
	}
	for m, idx := range perMatch {
		// a stable reading order: market, map, line, outcome, source
		sort.Slice(idx, func(a, b int) bool { return lineLess(&lines[idx[a]], &lines[idx[b]]) })
		rows := make([][]byte, len(idx))
		for j, i := range idx {
			rows[j] = x.json[i]
		}
		x.latest[m] = joinArray(rows)
	}
	return x
}

// before orders two lines by (captured_at, id) ascending.
func before(a, b *OddsLine) bool {
	if !a.CapturedAt.Equal(b.CapturedAt) {
		return a.CapturedAt.Before(b.CapturedAt)
	}
	return bytes.Compare(a.ID[:], b.ID[:]) < 0
}

var marketRank = map[string]int{"match_winner": 0, "map_handicap": 1, "total_maps": 2, "map_winner": 3, "outright": 4}

func lineLess(a, b *OddsLine) bool {
	if a.Market != b.Market {
		return marketRank[a.Market] < marketRank[b.Market]
	}
	if an, bn := ptrOr(a.MapNumber, 0), ptrOr(b.MapNumber, 0); an != bn {
		return an < bn
	}
	if al, bl := ptrOr(a.Line, 0), ptrOr(b.Line, 0); al != bl {
		return al < bl
	}
	if a.OutcomeKey != b.OutcomeKey {
		return a.OutcomeKey < b.OutcomeKey
	}
	return a.Source < b.Source
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// oddsLatestJSON is include=odds on a match: its latest line per (market,
// outcome, line, source), or nil.
func (s *Snapshot) oddsLatestJSON(match ID) []byte {
	if s.odds == nil {
		return nil
	}
	return s.odds.latest[match]
}

// oddsSnapshot is /odds without ?match=: the latest line per (market,
// outcome, line, source) of every open market, newest first, truncated to
// limit. An outright is open while its tournament is not finished at now.
func (s *Snapshot) oddsSnapshot(source string, limit int, now time.Time) [][]byte {
	if s.odds == nil {
		return nil
	}
	x := s.odds
	var rows [][]byte
	finished := map[int32]bool{}
	for j, i := range x.open {
		if len(rows) == limit {
			break
		}
		if source != "" && x.sources[x.src[i]] != source {
			continue
		}
		if ti := x.openTour[j]; ti >= 0 {
			done, seen := finished[ti]
			if !seen {
				done = s.tournaments[ti].Status(now) == "finished"
				finished[ti] = done
			}
			if done {
				continue
			}
		}
		rows = append(rows, x.json[i])
	}
	return rows
}

// oddsHistory is /odds?match=: the match's lines newest first, keyset-paged.
func (s *Server) oddsHistory(c *fiber.Ctx, snap *Snapshot, match ID, source string, cur *cursor, limit int) error {
	if snap.odds == nil {
		return sendList(c, nil, "")
	}
	x := snap.odds
	var keep func(int32) bool
	if source != "" {
		keep = func(i int32) bool { return x.sources[x.src[i]] == source }
	}
	return s.pageRows(c, "odds", x.byMatch[match], cur, limit, keep, func(i int32) []byte { return x.json[i] })
}

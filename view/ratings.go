package view

import (
	"fmt"
	"sort"
	"strings"

	"github.com/eodata/eo/tables"
)

// board is one ranking board (team or player) with its rows rendered and
// one index order per sort spec.
type board struct {
	rows []RankingRow
	json [][]byte
	// withHistory are the rows rendered with their rating_history (the
	// team board's include=rating_history).
	withHistory [][]byte
	orders      map[string][]int32
}

// ratingsData holds the snapshot's rankings, rating and roster history and
// model metrics.
type ratingsData struct {
	boards  map[string]*board // entity_type -> board
	history map[tables.ID]*ratingSeries
	roster  map[tables.ID]tables.Array
	metrics tables.Array
	gate    bool
	report  []byte // the model review report (modelreview.go)
}

// ratingSeries is one team's rating history, newest first.
type ratingSeries struct {
	json   [][]byte
	starts []int64 // period_start (Unix µs), descending
}

// RecentRatings is how many of a team's latest rating history rows a
// ranking row carries with include=rating_history.
const RecentRatings = 30

// RatingsSpec is the order of /teams/{id}/ratings: newest period first.
const RatingsSpec = "-period_start"

// buildRatings indexes rankings, the rating and roster history (ordered by
// team, newest first, as the files are) and model metrics.
func buildRatings(rankings []RankingRow, history []RatingRow, roster []RosterRow, metrics []ModelMetricsRow) *ratingsData {
	d := &ratingsData{boards: map[string]*board{}, history: map[tables.ID]*ratingSeries{}, roster: map[tables.ID]tables.Array{}}
	for i := range history {
		h := &history[i]
		sr := d.history[h.TeamID]
		if sr == nil {
			sr = &ratingSeries{}
			d.history[h.TeamID] = sr
		}
		if n := len(sr.starts); n > 0 && sr.starts[n-1] <= h.PeriodStart.UnixMicro() {
			panic(fmt.Sprintf("rating_history: team %s is not newest first", h.TeamID))
		}
		sr.json = append(sr.json, mustJSON(h))
		sr.starts = append(sr.starts, h.PeriodStart.UnixMicro())
	}
	byType := map[string][]RankingRow{}
	for _, r := range rankings {
		byType[r.EntityType] = append(byType[r.EntityType], r)
	}
	for typ, rs := range byType {
		d.boards[typ] = newBoard(rs)
	}
	if b := d.boards["team"]; b != nil {
		b.withHistory = make([][]byte, len(b.rows))
		for i := range b.rows {
			b.withHistory[i] = withRecent(b.json[i], d.history[b.rows[i].EntityID])
		}
	}
	tables.GroupRender(roster, func(r *RosterRow) tables.ID { return r.TeamID }, func(id tables.ID, a tables.Array) { d.roster[id] = a.Clone() })
	js := make([][]byte, len(metrics))
	for i := range metrics {
		js[i] = mustJSON(&metrics[i])
		if metrics[i].Market == "match_winner" && metrics[i].GatePassed {
			d.gate = true
		}
	}
	if len(js) > 0 {
		d.metrics = tables.Array{JSON: joinArray(js), N: len(js)}
	}
	return d
}

func newBoard(rows []RankingRow) *board {
	sort.Slice(rows, func(i, j int) bool { return rows[i].Rank < rows[j].Rank })
	b := &board{rows: rows, json: make([][]byte, len(rows)), orders: map[string][]int32{}}
	for i := range rows {
		b.json[i] = mustJSON(&rows[i])
	}
	for _, spec := range RankingSorts.Specs() {
		key := strings.TrimPrefix(spec, "-")
		desc := strings.HasPrefix(spec, "-")
		idx := make([]int32, len(rows))
		for i := range idx {
			idx[i] = int32(i)
		}
		sort.SliceStable(idx, func(x, y int) bool {
			a, c := rankingValue(&rows[idx[x]], key), rankingValue(&rows[idx[y]], key)
			switch {
			case a.null && c.null:
			case a.null:
				return false // nulls last in both directions
			case c.null:
				return true
			case a.v != c.v:
				return (a.v < c.v) != desc
			}
			return rows[idx[x]].Rank < rows[idx[y]].Rank // ties: by rank
		})
		b.orders[spec] = idx
	}
	return b
}

type rankVal struct {
	v    float64
	null bool
}

func rankingValue(r *RankingRow, key string) rankVal {
	switch key {
	case "value":
		return rankVal{v: r.Value}
	case "rating":
		return rankVal{v: r.Rating}
	case "rd":
		if r.RD == nil {
			return rankVal{null: true}
		}
		return rankVal{v: *r.RD}
	case "matches":
		return rankVal{v: float64(r.Matches)}
	}
	return rankVal{v: float64(r.Rank)}
}

// withRecent is a rendered team ranking row with its latest RecentRatings
// rating history rows spliced in as rating_history.
func withRecent(row []byte, sr *ratingSeries) []byte {
	var recent [][]byte
	if sr != nil {
		recent = sr.json[:min(len(sr.json), RecentRatings)]
	}
	arr := joinArray(recent)
	out := make([]byte, 0, len(row)+len(arr)+len(`,"rating_history":`))
	out = append(out, row[:len(row)-1]...) // the row's closing brace
	out = append(out, `,"rating_history":`...)
	out = append(out, arr...)
	return append(out, '}')
}

// ratingPage is a page of team's rating history after a cursor's key (the
// team's own: the key's id is the team).
func (s *Snapshot) ratingPage(team tables.ID, after *Key, limit int) Page {
	p := newPage(RatingsSpec)
	if s.ratings == nil {
		return p
	}
	sr := s.ratings.history[team]
	if sr == nil {
		return p
	}
	start := 0
	if after != nil {
		start = sort.Search(len(sr.starts), func(i int) bool { return sr.starts[i] < after.Val.Num })
	}
	for i := start; i < len(sr.json); i++ {
		if len(p.Rows) == limit {
			p.More = true
			break
		}
		p.Rows = append(p.Rows, sr.json[i])
		p.Last = Key{Val: numVal(sr.starts[i]), ID: team}
	}
	if !p.More {
		p.Last = Key{}
	}
	return p
}

// rankings returns the board of typ in the order of spec, filtered by the
// exact region and role (role matches nothing on the team board: teams have
// none), truncated to limit; the team board's rows with their
// rating_history when withHistory.
func (s *Snapshot) rankings(typ string, region, role AnyOf, spec string, limit int, withHistory bool) [][]byte {
	if s.ratings == nil {
		return nil
	}
	b := s.ratings.boards[typ]
	if b == nil {
		return nil
	}
	idx := b.orders[spec]
	if idx == nil {
		idx = b.orders[RankingSorts.Def]
	}
	out := make([][]byte, 0, min(limit, len(idx)))
	for _, i := range idx {
		if len(out) == limit {
			break
		}
		r := &b.rows[i]
		if !region.HasPtr(r.Region) || !role.HasPtr(r.Role) {
			continue
		}
		if withHistory && b.withHistory != nil {
			out = append(out, b.withHistory[i])
		} else {
			out = append(out, b.json[i])
		}
	}
	return out
}

// rosterHistory returns a team's roster history rows, newest first.
func (s *Snapshot) rosterHistory(team tables.ID) tables.Array {
	if s.ratings == nil {
		return tables.Array{}
	}
	return s.ratings.roster[team]
}

// modelMetrics returns the model metrics rows (one per market).
func (s *Snapshot) modelMetrics() tables.Array {
	if s.ratings == nil {
		return tables.Array{}
	}
	return s.ratings.metrics
}

// modelGatePassed reports whether eo_model cleared its gate in this snapshot.
func (s *Snapshot) modelGatePassed() bool {
	return s.ratings != nil && s.ratings.gate
}

// RankingSorts are the accepted sort keys of /rankings.
var RankingSorts = SortSet{Keys: []string{"rank", "value", "rating", "rd", "matches"}, Def: "rank"}

// RankingTypes are the boards /rankings serves.
var RankingTypes = map[string]bool{"team": true, "player": true}

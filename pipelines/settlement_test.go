package pipelines_test

import (
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// Settlement tests: every published odds line's is_winner is recomputed in Go
// from the published matches and map_results alone (not from the SQL that
// settles them) and compared row by row. The property tests in odds_test.go
// only check the shape of a settlement (one winner per two-way market, some
// outright settled), so a flipped winning side passed them; these fail.

// settleMatch is one published match, as the settlement rules need it.
type settleMatch struct {
	tour, teamA, teamB, status string
	scoreA, scoreB             sql.NullInt64
	sched                      time.Time
	winner                     sql.NullString
}

type settleMapKey struct {
	match string
	num   int64
}

// settleLine is one published odds line.
type settleLine struct {
	id, market, outcome, source string
	match, tour, participant    sql.NullString
	mapNumber                   sql.NullInt64
	line                        sql.NullFloat64
	isWinner                    sql.NullBool
}

// settleTally counts lines (rows of odds_lines) of one market by the reason
// of their expected is_winner.
type settleTally struct {
	rows, won, lost                        int
	push, unplayed, tied                   int
	cancelled, pending, unfinished, unsure int
	settledMarkets                         map[string]bool
}

func (c *settleTally) String() string {
	return fmt.Sprintf("%d rows: %d won, %d lost (%d settled markets); null: %d push, %d map not played, %d tied, "+
		"%d cancelled, %d not completed, %d tournament unfinished; %d not checked",
		c.rows, c.won, c.lost, len(c.settledMarkets), c.push, c.unplayed, c.tied, c.cancelled, c.pending, c.unfinished, c.unsure)
}

// settleOutright is the expected result of a tournament's outright.
type settleOutright struct {
	settled bool   // every match completed or cancelled, the final completed with a winner
	winner  string // the final's winner when settled
	unsure  bool   // several latest-scheduled matches that disagree: the final is ambiguous
}

func settleQuery(t *testing.T, db *sql.DB, q string, scan func(*sql.Rows) error) {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// checkSettlement compares every odds line's is_winner with the result the
// published matches and map_results imply, and returns the tallies per market.
func checkSettlement(t *testing.T, db *sql.DB) map[string]*settleTally {
	t.Helper()
	matches := map[string]settleMatch{}
	settleQuery(t, db, `SELECT CAST(id AS VARCHAR), CAST(tournament_id AS VARCHAR), CAST(team_a_id AS VARCHAR),
  CAST(team_b_id AS VARCHAR), status, score_a, score_b, scheduled_at, CAST(winner_team_id AS VARCHAR) FROM matches`,
		func(r *sql.Rows) error {
			var id string
			var m settleMatch
			err := r.Scan(&id, &m.tour, &m.teamA, &m.teamB, &m.status, &m.scoreA, &m.scoreB, &m.sched, &m.winner)
			matches[id] = m
			return err
		})
	maps := map[settleMapKey][2]int64{}
	settleQuery(t, db, `SELECT CAST(match_id AS VARCHAR), map_number, score_a, score_b FROM map_results`,
		func(r *sql.Rows) error {
			var k settleMapKey
			var s [2]int64
			err := r.Scan(&k.match, &k.num, &s[0], &s[1])
			maps[k] = s
			return err
		})
	var lines []settleLine
	settleQuery(t, db, `SELECT CAST(id AS VARCHAR), market, outcome_key, source, CAST(match_id AS VARCHAR),
  CAST(tournament_id AS VARCHAR), CAST(participant_id AS VARCHAR), map_number, line, is_winner FROM odds_lines`,
		func(r *sql.Rows) error {
			var l settleLine
			err := r.Scan(&l.id, &l.market, &l.outcome, &l.source, &l.match, &l.tour, &l.participant, &l.mapNumber, &l.line, &l.isWinner)
			lines = append(lines, l)
			return err
		})
	if len(matches) == 0 || len(lines) == 0 {
		t.Fatalf("%d matches, %d odds lines: nothing to check", len(matches), len(lines))
	}

	// The series result from the scores; the published winner_team_id must
	// agree with it (it is not used below).
	for id, m := range matches {
		var w string
		if m.status == "completed" && m.scoreA.Valid && m.scoreB.Valid {
			switch {
			case m.scoreA.Int64 > m.scoreB.Int64:
				w = m.teamA
			case m.scoreB.Int64 > m.scoreA.Int64:
				w = m.teamB
			}
		}
		if m.winner.String != w {
			t.Errorf("match %s (%s %v-%v): winner_team_id %q, scores say %q", id, m.status, m.scoreA, m.scoreB, m.winner.String, w)
		}
	}

	// Outrights: a tournament settles once every match is completed or
	// cancelled and its latest-scheduled match is completed with a winner.
	byTour := map[string][]settleMatch{}
	for _, m := range matches {
		byTour[m.tour] = append(byTour[m.tour], m)
	}
	outright := map[string]settleOutright{}
	for tour, ms := range byTour {
		done := true
		var last time.Time
		for _, m := range ms {
			done = done && (m.status == "completed" || m.status == "cancelled")
			if m.sched.After(last) {
				last = m.sched
			}
		}
		var finals []settleMatch
		for _, m := range ms {
			if m.sched.Equal(last) {
				finals = append(finals, m)
			}
		}
		won := func(m settleMatch) string {
			if m.status != "completed" || !m.scoreA.Valid || !m.scoreB.Valid || m.scoreA.Int64 == m.scoreB.Int64 {
				return ""
			}
			if m.scoreA.Int64 > m.scoreB.Int64 {
				return m.teamA
			}
			return m.teamB
		}
		var o settleOutright
		o.winner = won(finals[0])
		for _, f := range finals[1:] {
			if won(f) != o.winner {
				o.unsure = true
			}
		}
		o.settled = done && o.winner != ""
		outright[tour] = o
	}

	tally := map[string]*settleTally{}
	bad := 0
	for _, l := range lines {
		c := tally[l.market]
		if c == nil {
			c = &settleTally{settledMarkets: map[string]bool{}}
			tally[l.market] = c
		}
		c.rows++
		var want sql.NullBool // zero: null
		var why string
		homeOrOver := l.outcome == "home" || l.outcome == "over"
		if l.market == "outright" {
			if l.match.Valid || !l.tour.Valid || !l.participant.Valid {
				t.Fatalf("outright line %s: match %v, tournament %v, participant %v", l.id, l.match, l.tour, l.participant)
			}
			o, ok := outright[l.tour.String]
			switch {
			case ok && o.unsure:
				c.unsure++
				continue
			case ok && o.settled:
				want = sql.NullBool{Valid: true, Bool: l.participant.String == o.winner}
				why = "tournament won by " + o.winner
			default:
				c.unfinished++
				why = "tournament not finished"
			}
		} else {
			m, ok := matches[l.match.String]
			if !ok || l.tour.Valid {
				t.Fatalf("%s line %s: match %v not published (tournament %v)", l.market, l.id, l.match, l.tour)
			}
			// the team outcomes name team A (home) and team B (away)
			if l.market != "total_maps" && l.participant.String != map[bool]string{true: m.teamA, false: m.teamB}[l.outcome == "home"] {
				t.Errorf("%s line %s: %s participant %v, match teams %s / %s", l.market, l.id, l.outcome, l.participant, m.teamA, m.teamB)
			}
			a, b := m.scoreA.Int64, m.scoreB.Int64
			switch {
			case m.status == "cancelled":
				c.cancelled++
				why = "match cancelled"
			case m.status != "completed":
				c.pending++
				why = "match " + m.status
			case !m.scoreA.Valid || !m.scoreB.Valid:
				t.Fatalf("completed match %s without scores", l.match.String)
			case l.market == "match_winner":
				if a == b {
					c.tied++
					why = "tied series"
					break
				}
				want = sql.NullBool{Valid: true, Bool: (l.outcome == "home") == (a > b)}
				why = fmt.Sprintf("series %d-%d", a, b)
			case l.market == "total_maps" || l.market == "map_handicap":
				if !l.line.Valid {
					t.Fatalf("%s line %s without a line", l.market, l.id)
				}
				x, y := float64(a+b), l.line.Float64 // total_maps: maps played against the line
				if l.market == "map_handicap" {
					x, y = float64(a)+l.line.Float64, float64(b) // team A's maps with the handicap against team B's
				}
				why = fmt.Sprintf("series %d-%d, line %g", a, b, l.line.Float64)
				if x == y {
					c.push++
					why += " (push)"
					break
				}
				want = sql.NullBool{Valid: true, Bool: homeOrOver == (x > y)}
			case l.market == "map_winner":
				if !l.mapNumber.Valid {
					t.Fatalf("map_winner line %s without a map_number", l.id)
				}
				s, played := maps[settleMapKey{l.match.String, l.mapNumber.Int64}]
				switch {
				case !played:
					c.unplayed++
					why = fmt.Sprintf("map %d not played", l.mapNumber.Int64)
				case s[0] == s[1]:
					c.tied++
					why = fmt.Sprintf("map %d tied", l.mapNumber.Int64)
				default:
					want = sql.NullBool{Valid: true, Bool: (l.outcome == "home") == (s[0] > s[1])}
					why = fmt.Sprintf("map %d %d-%d", l.mapNumber.Int64, s[0], s[1])
				}
			default:
				t.Fatalf("unknown market %q", l.market)
			}
		}
		if want.Valid {
			c.settledMarkets[l.market+"/"+l.match.String+l.tour.String+fmt.Sprint(l.mapNumber.Int64, l.line.Float64)] = true
			if want.Bool {
				c.won++
			} else {
				c.lost++
			}
		}
		if l.isWinner != want {
			if bad++; bad <= 20 {
				what := l.market
				if l.mapNumber.Valid {
					what += fmt.Sprintf(" map %d", l.mapNumber.Int64)
				}
				if l.line.Valid {
					what += fmt.Sprintf(" line %g", l.line.Float64)
				}
				t.Errorf("%s %s %s (line id %s): is_winner %s, want %s (%s)", l.source, what, l.outcome, l.id, nb(l.isWinner), nb(want), why)
			}
		}
	}
	if bad > 20 {
		t.Errorf("... %d wrongly settled lines in all", bad)
	}
	return tally
}

func nb(b sql.NullBool) string {
	if !b.Valid {
		return "NULL"
	}
	return fmt.Sprint(b.Bool)
}

func logTally(t *testing.T, tally map[string]*settleTally) {
	t.Helper()
	var names []string
	for k := range tally {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t.Logf("%-12s %s", k, tally[k])
	}
}

// TestSettlementSyntheticWorld: in the 400-match synthetic world, every
// line's is_winner is the result the published scores and map results imply,
// and every market kind has lines that won and lines that lost (so a flipped
// side cannot pass), as well as null lines for unplayed maps, cancelled and
// unfinished matches, and unfinished tournaments.
func TestSettlementSyntheticWorld(t *testing.T) {
	db := openOut(t, oddsWorld(t))
	tally := checkSettlement(t, db)
	logTally(t, tally)
	sum := func(f func(*settleTally) int) int {
		n := 0
		for _, c := range tally {
			n += f(c)
		}
		return n
	}
	for _, k := range []string{"match_winner", "total_maps", "map_handicap", "map_winner", "outright"} {
		c := tally[k]
		if c == nil || c.won == 0 || c.lost == 0 {
			t.Errorf("%s: no settled lines both won and lost (%v): the check would be vacuous", k, c)
		}
	}
	if c := tally["map_winner"]; c != nil && c.unplayed == 0 {
		t.Error("no map_winner line for a map that was not played")
	}
	if c := tally["outright"]; c != nil && (c.unfinished == 0 || c.unsure != 0) {
		t.Errorf("outright: %d lines of unfinished tournaments (want some), %d with an ambiguous final (want none)", c.unfinished, c.unsure)
	}
	if n := sum(func(c *settleTally) int { return c.cancelled }); n == 0 {
		t.Error("no line of a cancelled match")
	}
	if n := sum(func(c *settleTally) int { return c.pending }); n == 0 {
		t.Error("no line of a live or scheduled match")
	}
}

// settleCaps prices one two-way market with two independent books, so it is
// published: bk-1 at 12:00 and bk-3 at 12:01 on 2025-03-01.
func settleCaps(market, match string, mapNumber int, line string, legs [2]string) []string {
	mn, ln := "null", "null"
	if mapNumber > 0 {
		mn = fmt.Sprint(mapNumber)
	}
	if line != "" {
		ln = line
	}
	var out []string
	for i, bk := range []string{"bk-1", "bk-3"} {
		at := fmt.Sprintf("2025-03-01T12:0%d:00Z", i)
		for j, o := range legs {
			out = append(out, fmt.Sprintf(`{"book":%q,"market":%q,"match_id":%q,"tournament_id":"","map_number":%s,"outcome":%q,"line":%s,"price":%v,"captured_at":%q}`,
				bk, market, match, mn, o, ln, []float64{1.85, 1.95}[(i+j)%2], at))
		}
	}
	return out
}

// TestSettlementHandPushes: lines the synthetic world never has, on the hand
// fixture (m-1 completed 2-0 with maps 1 and 2 played, m-4 completed 1-3 with
// no map results, m-2 live, m-5 cancelled): integer lines that push, handicaps
// either side of the result, an away series win, a map that was not played.
func TestSettlementHandPushes(t *testing.T) {
	ha, ou := [2]string{"home", "away"}, [2]string{"over", "under"}
	var caps []string
	for _, c := range []struct {
		market, match string
		mapNumber     int
		line          string
		legs          [2]string
	}{
		{"total_maps", "m-1", 0, "2", ou},      // 2 maps: push
		{"total_maps", "m-1", 0, "1.5", ou},    // over
		{"map_handicap", "m-1", 0, "-2", ha},   // 2 - 2 = 0: push
		{"map_handicap", "m-1", 0, "-2.5", ha}, // away
		{"map_winner", "m-1", 1, "", ha},       // 13-9: home
		{"map_winner", "m-1", 2, "", ha},       // 16-14: home
		{"map_winner", "m-1", 3, "", ha},       // not played
		{"match_winner", "m-4", 0, "", ha},     // 1-3: away
		{"total_maps", "m-4", 0, "4", ou},      // push
		{"total_maps", "m-4", 0, "3.5", ou},    // over
		{"total_maps", "m-4", 0, "4.5", ou},    // under
		{"map_handicap", "m-4", 0, "2", ha},    // 1 + 2 = 3: push
		{"map_handicap", "m-4", 0, "1.5", ha},  // away
		{"map_handicap", "m-4", 0, "2.5", ha},  // home
		{"map_winner", "m-4", 1, "", ha},       // no map result: null
		{"match_winner", "m-2", 0, "", ha},     // live: null
		{"total_maps", "m-5", 0, "2.5", ou},    // cancelled: null
	} {
		caps = append(caps, settleCaps(c.market, c.match, c.mapNumber, c.line, c.legs)...)
	}
	rep := runCaptures(t, caps)
	db := openOut(t, rep)
	// 17 markets above plus the fixture's m-1 match_winner (bk-1 only: not published)
	if n := count(t, db, `SELECT count(DISTINCT market_id) FROM odds_lines`); n != 17 {
		t.Fatalf("%d markets published, want 17", n)
	}
	tally := checkSettlement(t, db)
	logTally(t, tally)
	var got []string
	for _, k := range []string{"match_winner", "total_maps", "map_handicap", "map_winner"} {
		c := tally[k]
		got = append(got, fmt.Sprintf("%s %d/%d/%d/%d/%d/%d", k, c.won, c.lost, c.push, c.unplayed, c.pending, c.cancelled))
	}
	// one row per outcome: both books price once, the line is published at 12:01
	want := []string{
		"match_winner 1/1/0/0/2/0",
		"total_maps 3/3/4/0/0/2",
		"map_handicap 3/3/4/0/0/0",
		"map_winner 2/2/0/4/0/0",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("won/lost/push/unplayed/pending/cancelled rows:\n got %v\nwant %v", got, want)
	}
}

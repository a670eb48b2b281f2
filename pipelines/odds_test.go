package pipelines_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/synth"
)

// The synthetic world for the odds property tests: a few hundred matches run
// through the real pipeline once per test binary.
var oddsShared = worldtest.Shared[pipelines.Report]{
	World:  synth.Options{Seed: 11, Now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), Matches: 400},
	Prefix: "eo-odds-world-"}

func TestMain(m *testing.M) {
	code := m.Run()
	oddsShared.Remove()
	os.Exit(code)
}

func oddsWorld(t *testing.T) pipelines.Report {
	t.Helper()
	_, rep := oddsShared.Get(t, func(ctx context.Context, st *store.Local, dir string) (pipelines.Report, error) {
		return pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: filepath.Join(dir, "work")})
	})
	return rep
}

// openOut opens DuckDB on the tables a run exported.
func openOut(t *testing.T, rep pipelines.Report) *sql.DB {
	t.Helper()
	return worldtest.OpenTables(t, rep.Tables)
}

// count is the integer result of a one-row, one-column query.
func count(t *testing.T, db *sql.DB, q string) int { t.Helper(); return one[int](t, db, q) }

func TestOddsProperties(t *testing.T) {
	rep := oddsWorld(t)
	db := openOut(t, rep)
	total := count(t, db, `SELECT count(*) FROM odds_lines`)
	if total < 1000 {
		t.Fatalf("only %d odds lines in a 400-match world", total)
	}
	t.Logf("%d odds lines, %d markets", total, count(t, db, `SELECT count(DISTINCT market_id) FROM odds_lines`))
	for _, c := range []struct {
		name, q string
	}{
		{"prices above 1 and finite", `SELECT count(*) FROM odds_lines WHERE NOT (price > 1) OR NOT isfinite(price)`},
		{"book_count >= 2 on eo_market", `SELECT count(*) FROM odds_lines WHERE source = 'eo_market' AND (book_count IS NULL OR book_count < 2)`},
		{"model_version null on eo_market", `SELECT count(*) FROM odds_lines WHERE source = 'eo_market' AND model_version IS NOT NULL`},
		{"exactly one of match_id and tournament_id", `SELECT count(*) FROM odds_lines WHERE (match_id IS NULL) = (tournament_id IS NULL)`},
		{"outcome_key in the enum (outright: participant id)", `SELECT count(*) FROM odds_lines WHERE NOT (
			(market = 'total_maps' AND outcome_key IN ('over', 'under') AND participant_id IS NULL AND participant_type IS NULL)
			OR (market IN ('match_winner', 'map_handicap', 'map_winner') AND outcome_key IN ('home', 'away') AND participant_type = 'team')
			OR (market = 'outright' AND outcome_key = CAST(participant_id AS VARCHAR) AND participant_type = 'team'))`},
		{"map_number only on map_winner", `SELECT count(*) FROM odds_lines WHERE (map_number IS NOT NULL) <> (market = 'map_winner')`},
		{"unique ids", `SELECT count(*) - count(DISTINCT id) FROM odds_lines`},
		{"one market per market_id", `SELECT count(*) FROM (SELECT market_id FROM odds_lines GROUP BY market_id
			HAVING count(DISTINCT (market, match_id, tournament_id, map_number, line)) > 1)`},
		// append-on-change: no two consecutive rows of a series with one price
		{"append-on-change", `SELECT count(*) FROM (SELECT price, lag(price) OVER (PARTITION BY market_id, outcome_key, source ORDER BY captured_at) AS prev
			FROM odds_lines) WHERE price = prev`},
		// is_closing: exactly one per series of a settled or cancelled market that has a line before the cutoff
		{"is_closing only before the cutoff", `SELECT count(*) FROM odds_lines o JOIN matches m ON m.id = o.match_id
			WHERE o.is_closing AND NOT (o.captured_at < m.scheduled_at)`},
		{"is_closing only when the match is over", `SELECT count(*) FROM odds_lines o JOIN matches m ON m.id = o.match_id
			WHERE o.is_closing AND m.status NOT IN ('completed', 'cancelled')`},
		{"exactly one is_closing per closed series", `SELECT count(*) FROM (
			SELECT o.market_id, o.outcome_key, o.source, count(*) FILTER (WHERE o.is_closing) AS n
			FROM odds_lines o JOIN matches m ON m.id = o.match_id
			WHERE m.status IN ('completed', 'cancelled')
			GROUP BY ALL HAVING bool_or(o.captured_at < m.scheduled_at)) WHERE n <> 1`},
		{"is_closing is the last line before scheduled_at", `SELECT count(*) FROM odds_lines o JOIN matches m ON m.id = o.match_id
			WHERE o.is_closing AND EXISTS (SELECT 1 FROM odds_lines x WHERE x.market_id = o.market_id AND x.outcome_key = o.outcome_key
			  AND x.source = o.source AND x.captured_at > o.captured_at AND x.captured_at < m.scheduled_at)`},
		// settlement
		{"unsettled while the match is not completed", `SELECT count(*) FROM odds_lines o JOIN matches m ON m.id = o.match_id
			WHERE m.status <> 'completed' AND o.is_winner IS NOT NULL`},
		{"settled markets: is_winner on every line", `SELECT count(*) FROM (SELECT market_id FROM odds_lines GROUP BY market_id
			HAVING bool_or(is_winner IS NOT NULL) AND bool_or(is_winner IS NULL))`},
		{"settled two-way markets: exactly one winning outcome", `SELECT count(*) FROM (
			SELECT market_id, count(DISTINCT outcome_key) FILTER (WHERE is_winner) AS w, count(DISTINCT outcome_key) AS k
			FROM odds_lines WHERE market <> 'outright' GROUP BY market_id HAVING bool_or(is_winner IS NOT NULL)) WHERE w <> 1 OR k <> 2`},
		{"is_winner constant along a series", `SELECT count(*) FROM (SELECT market_id, outcome_key FROM odds_lines GROUP BY ALL
			HAVING count(DISTINCT is_winner) > 1)`},
		{"match_winner winner is the match winner", `SELECT count(*) FROM odds_lines o JOIN matches m ON m.id = o.match_id
			WHERE o.market = 'match_winner' AND o.is_winner AND o.participant_id <> m.winner_team_id`},
		{"completed matches with a match_winner line are settled", `SELECT count(*) FROM odds_lines o JOIN matches m ON m.id = o.match_id
			WHERE o.market = 'match_winner' AND m.status = 'completed' AND m.winner_team_id IS NOT NULL AND o.is_winner IS NULL`},
		{"data_available.odds iff a published line", `SELECT count(*) FROM matches m
			WHERE m.has_odds <> EXISTS (SELECT 1 FROM odds_lines o WHERE o.match_id = m.id)`},
	} {
		if n := count(t, db, c.q); n != 0 {
			t.Errorf("%s: %d violating rows", c.name, n)
		}
	}
	// Every kind of market is present, and some are settled and closing.
	for _, q := range []string{
		`SELECT count(DISTINCT market) FROM odds_lines WHERE market IN ('match_winner','total_maps','map_handicap','map_winner','outright')`,
	} {
		if n := count(t, db, q); n != 5 {
			t.Errorf("market kinds: %d, want 5", n)
		}
	}
	if count(t, db, `SELECT count(*) FROM odds_lines WHERE is_winner`) == 0 || count(t, db, `SELECT count(*) FROM odds_lines WHERE is_closing`) == 0 {
		t.Error("no settled or closing lines in the world")
	}
	if count(t, db, `SELECT count(*) FROM odds_lines WHERE market = 'outright' AND is_winner`) == 0 {
		t.Error("no settled outright in the world")
	}
	if count(t, db, `SELECT count(*) FROM odds_lines o JOIN matches m ON m.id = o.match_id WHERE m.status = 'cancelled'`) == 0 {
		t.Error("no cancelled match kept its odds history")
	}
}

// TestOddsProbabilitiesSumToOne: at every capture moment of a market, the
// implied probabilities of its published outcomes (each outcome's latest row
// at that moment) sum to 1 within 1e-9.
func TestOddsProbabilitiesSumToOne(t *testing.T) {
	rep := oddsWorld(t)
	db := openOut(t, rep)
	rows, err := db.Query(`
WITH moments AS (SELECT DISTINCT market_id, source, captured_at AS t FROM odds_lines),
latest AS (
  SELECT m.market_id, m.source, m.t, o.outcome_key,
         arg_max(o.price, o.captured_at) AS price
  FROM moments m JOIN odds_lines o ON o.market_id = m.market_id AND o.source = m.source AND o.captured_at <= m.t
  GROUP BY ALL)
SELECT market_id, source, t, sum(1 / price) AS s, count(*) AS n
FROM latest GROUP BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	moments, worst := 0, 0.0
	for rows.Next() {
		var id, src string
		var at time.Time
		var s float64
		var n int
		if err := rows.Scan(&id, &src, &at, &s, &n); err != nil {
			t.Fatal(err)
		}
		moments++
		if d := math.Abs(s - 1); d > worst {
			worst = d
		}
		if math.Abs(s-1) > 1e-9 || n < 2 {
			t.Errorf("market %s %s at %s: %d outcomes, implied probabilities sum to %.12f", id, src, at, n, s)
		}
	}
	if moments == 0 {
		t.Fatal("no moments")
	}
	t.Logf("%d market moments, worst |sum-1| = %.3g", moments, worst)
}

// --- hand-made captures -----------------------------------------------------

// reference computes the eo_market line from each contributor's current
// prices, independently of the SQL: de-vig per contributor (>= 2 outcomes),
// median per outcome (>= 2 contributors), renormalise, invert.
func reference(prices map[string]map[string]float64) (price map[string]float64, books map[string]int) {
	per := map[string][]float64{}
	for _, q := range prices {
		if len(q) < 2 {
			continue
		}
		tot := 0.0
		for _, p := range q {
			tot += 1 / p
		}
		for o, p := range q {
			per[o] = append(per[o], 1/p/tot)
		}
	}
	med := map[string]float64{}
	books = map[string]int{}
	sum := 0.0
	for o, ps := range per {
		if len(ps) < 2 {
			continue
		}
		sort.Float64s(ps)
		n := len(ps)
		m := ps[n/2]
		if n%2 == 0 {
			m = (ps[n/2-1] + ps[n/2]) / 2
		}
		med[o] = m
		books[o] = n
		sum += m
	}
	if len(med) < 2 {
		return nil, nil
	}
	price = map[string]float64{}
	for o, m := range med {
		price[o] = sum / m
	}
	return price, books
}

type handLine struct {
	market, outcome, label string
	line                   sql.NullFloat64
	mapNumber              sql.NullInt64
	price                  float64
	bookCount              int
	isWinner               sql.NullBool
	isClosing              bool
	at                     time.Time
	match, tour            sql.NullString
}

func capLine(book, market, match, tour, outcome string, line string, price float64, at string) string {
	if line == "" {
		line = "null"
	}
	return fmt.Sprintf(`{"book":%q,"market":%q,"match_id":%q,"tournament_id":%q,"map_number":null,"outcome":%q,"line":%s,"price":%v,"captured_at":%q}`,
		book, market, match, tour, outcome, line, price, at)
}

// handBooks: bk-1 and bk-2 are in the fixture; bk-3, bk-4 are independent;
// bk-5 copies bk-2 and bk-6 copies bk-5 (a white label of a white label).
var handBooks = []string{
	`{"id":"bk-3","name":"Thirdline Sports","copies_book":"","changed_at":"2025-03-01T10:00:00Z"}`,
	`{"id":"bk-4","name":"Quartobet","copies_book":"","changed_at":"2025-03-01T10:00:00Z"}`,
	`{"id":"bk-5","name":"Mirrorbook","copies_book":"bk-2","changed_at":"2025-03-01T10:00:00Z"}`,
	`{"id":"bk-6","name":"Echowager","copies_book":"bk-5","changed_at":"2025-03-01T10:00:00Z"}`,
}

// handBookNames are every book name and id of the hand fixture: none may
// appear in any published file.
var handBookNames = []string{"Fixturebet", "Samplewager", "Thirdline Sports", "Quartobet", "Mirrorbook", "Echowager",
	"bk-1", "bk-2", "bk-3", "bk-4", "bk-5", "bk-6"}

var handCaptures = []string{
	// A. m-1 match_winner: bk-1's fixture capture at 12:00:00.250 (1.55/2.45),
	// then bk-2, bk-3, bk-4: 2, 3, then 4 contributors (an even median).
	capLine("bk-2", "match_winner", "m-1", "", "home", "", 1.60, "2025-03-01T12:01:00Z"),
	capLine("bk-2", "match_winner", "m-1", "", "away", "", 2.30, "2025-03-01T12:01:00Z"),
	capLine("bk-3", "match_winner", "m-1", "", "home", "", 1.50, "2025-03-01T12:02:00.125Z"),
	capLine("bk-3", "match_winner", "m-1", "", "away", "", 2.60, "2025-03-01T12:02:00.125Z"),
	capLine("bk-4", "match_winner", "m-1", "", "home", "", 1.70, "2025-03-01T12:03:00Z"),
	capLine("bk-4", "match_winner", "m-1", "", "away", "", 2.10, "2025-03-01T12:03:00Z"),
	// after scheduled_at (2025-03-02T15:00): not the closing line
	capLine("bk-4", "match_winner", "m-1", "", "home", "", 1.40, "2025-03-02T15:30:00Z"),
	capLine("bk-4", "match_winner", "m-1", "", "away", "", 2.90, "2025-03-02T15:30:00Z"),

	// B. m-1 total_maps 2.5: bk-2 and its copies bk-5, bk-6 are one
	// contributor: nothing published until bk-1 prices.
	capLine("bk-2", "total_maps", "m-1", "", "over", "2.5", 1.80, "2025-03-01T12:00:00Z"),
	capLine("bk-2", "total_maps", "m-1", "", "under", "2.5", 2.00, "2025-03-01T12:00:00Z"),
	capLine("bk-5", "total_maps", "m-1", "", "over", "2.5", 1.80, "2025-03-01T12:00:05Z"),
	capLine("bk-5", "total_maps", "m-1", "", "under", "2.5", 2.00, "2025-03-01T12:00:05Z"),
	capLine("bk-6", "total_maps", "m-1", "", "over", "2.5", 1.80, "2025-03-01T12:00:07Z"),
	capLine("bk-6", "total_maps", "m-1", "", "under", "2.5", 2.00, "2025-03-01T12:00:07Z"),
	capLine("bk-1", "total_maps", "m-1", "", "over", "2.5", 1.90, "2025-03-01T12:10:00Z"),
	capLine("bk-1", "total_maps", "m-1", "", "under", "2.5", 1.90, "2025-03-01T12:10:00Z"),
	// the copy moves: the contributor's latest capture is bk-5's
	capLine("bk-5", "total_maps", "m-1", "", "over", "2.5", 1.70, "2025-03-01T12:20:00Z"),
	capLine("bk-5", "total_maps", "m-1", "", "under", "2.5", 2.10, "2025-03-01T12:20:00Z"),
	// another line of the same market kind is a different market
	capLine("bk-1", "total_maps", "m-1", "", "over", "1.5", 1.20, "2025-03-01T12:10:00Z"),
	capLine("bk-1", "total_maps", "m-1", "", "under", "1.5", 4.00, "2025-03-01T12:10:00Z"),
	capLine("bk-3", "total_maps", "m-1", "", "over", "1.5", 1.25, "2025-03-01T12:11:00Z"),
	capLine("bk-3", "total_maps", "m-1", "", "under", "1.5", 3.60, "2025-03-01T12:11:00Z"),

	// C. m-1 map_handicap -1.5: bk-2 prices only home (cannot be de-vigged,
	// left out), so one full contributor publishes nothing; bk-3 makes two.
	capLine("bk-1", "map_handicap", "m-1", "", "home", "-1.5", 2.20, "2025-03-01T12:00:00Z"),
	capLine("bk-1", "map_handicap", "m-1", "", "away", "-1.5", 1.65, "2025-03-01T12:00:00Z"),
	capLine("bk-2", "map_handicap", "m-1", "", "home", "-1.5", 2.40, "2025-03-01T12:00:30Z"),
	capLine("bk-3", "map_handicap", "m-1", "", "home", "-1.5", 2.10, "2025-03-01T12:05:00Z"),
	capLine("bk-3", "map_handicap", "m-1", "", "away", "-1.5", 1.75, "2025-03-01T12:05:00Z"),
	capLine("bk-2", "map_handicap", "m-1", "", "away", "-1.5", 1.55, "2025-03-01T12:06:00Z"),

	// D. tr-1 outright: tm-3 priced by one contributor only: not published;
	// tm-1 and tm-2 renormalised over themselves.
	capLine("bk-1", "outright", "", "tr-1", "tm-1", "", 3.00, "2025-02-28T12:00:00Z"),
	capLine("bk-1", "outright", "", "tr-1", "tm-2", "", 2.50, "2025-02-28T12:00:00Z"),
	capLine("bk-1", "outright", "", "tr-1", "tm-3", "", 4.00, "2025-02-28T12:00:00Z"),
	capLine("bk-2", "outright", "", "tr-1", "tm-1", "", 2.80, "2025-02-28T13:00:00Z"),
	capLine("bk-2", "outright", "", "tr-1", "tm-2", "", 2.60, "2025-02-28T13:00:00Z"),

	// E. m-5 (cancelled) and m-3 (scheduled) match_winner, two books each.
	capLine("bk-1", "match_winner", "m-5", "", "home", "", 1.90, "2025-03-05T12:00:00Z"),
	capLine("bk-1", "match_winner", "m-5", "", "away", "", 1.90, "2025-03-05T12:00:00Z"),
	capLine("bk-3", "match_winner", "m-5", "", "home", "", 1.80, "2025-03-05T13:00:00Z"),
	capLine("bk-3", "match_winner", "m-5", "", "away", "", 2.00, "2025-03-05T13:00:00Z"),
	capLine("bk-1", "match_winner", "m-3", "", "home", "", 1.50, "2025-03-05T12:00:00Z"),
	capLine("bk-1", "match_winner", "m-3", "", "away", "", 2.50, "2025-03-05T12:00:00Z"),
	capLine("bk-4", "match_winner", "m-3", "", "home", "", 1.45, "2025-03-05T13:00:00Z"),
	capLine("bk-4", "match_winner", "m-3", "", "away", "", 2.60, "2025-03-05T13:00:00Z"),
}

// runCaptures lands the fixture with the hand books and captures, runs the
// pipeline and requires that nothing was quarantined.
func runCaptures(t *testing.T, caps []string) pipelines.Report {
	t.Helper()
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, map[raw.Entity][]string{raw.Books: handBooks, raw.PriceCaptures: caps})
	rep := runPipeline(t, st)
	if q := rep.QuarantinedTotal(); q != 0 {
		t.Fatalf("hand captures quarantined: %v", rep.Quarantined)
	}
	return rep
}

func runHand(t *testing.T) (pipelines.Report, []handLine, map[string]string) {
	t.Helper()
	rep := runCaptures(t, handCaptures)
	db := openOut(t, rep)
	rows, err := db.Query(`
SELECT o.market, o.outcome_key, o.label, o.line, o.map_number, o.price, o.book_count, o.is_winner, o.is_closing, o.captured_at,
       CAST(o.match_id AS VARCHAR), CAST(o.tournament_id AS VARCHAR)
FROM odds_lines o ORDER BY o.market, o.line, o.match_id, o.outcome_key, o.captured_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []handLine
	for rows.Next() {
		var l handLine
		var bc sql.NullInt64
		if err := rows.Scan(&l.market, &l.outcome, &l.label, &l.line, &l.mapNumber, &l.price, &bc, &l.isWinner, &l.isClosing, &l.at,
			&l.match, &l.tour); err != nil {
			t.Fatal(err)
		}
		l.bookCount = int(bc.Int64)
		out = append(out, l)
	}
	// upstream match id -> service id, from the matches table
	ids := map[string]string{}
	r2, err := db.Query(`SELECT CAST(m.id AS VARCHAR), m.stage FROM matches m`)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	for r2.Next() {
		var id, stage string
		if err := r2.Scan(&id, &stage); err != nil {
			t.Fatal(err)
		}
		ids[stage] = id
	}
	return rep, out, ids
}

func series(lines []handLine, keep func(handLine) bool) []handLine {
	var out []handLine
	for _, l := range lines {
		if keep(l) {
			out = append(out, l)
		}
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestOddsHandCases(t *testing.T) {
	_, lines, stage := runHand(t)
	m1, m5, m3 := stage["Semi-final"], stage["Showmatch"], stage["Final"]
	if m1 == "" || m5 == "" || m3 == "" {
		t.Fatalf("fixture stages: %v", stage)
	}
	ts := func(s string) time.Time {
		x, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	check := func(name string, got []handLine, outcome string, at time.Time, books map[string]map[string]float64) {
		t.Helper()
		want, counts := reference(books)
		var row *handLine
		for i := range got {
			if got[i].outcome == outcome && got[i].at.Equal(at) {
				row = &got[i]
			}
		}
		if want == nil {
			if row != nil {
				t.Errorf("%s: %s at %s published (%v), want nothing", name, outcome, at, row.price)
			}
			return
		}
		if row == nil {
			t.Errorf("%s: no %s row at %s; have %+v", name, outcome, at, got)
			return
		}
		if !near(row.price, want[outcome]) || row.bookCount != counts[outcome] {
			t.Errorf("%s: %s at %s = %.12f (%d books), want %.12f (%d books)", name, outcome, at, row.price, row.bookCount,
				want[outcome], counts[outcome])
		}
	}

	// A. match winner of m-1: first row once two contributors priced; the
	// even median with four.
	mw := series(lines, func(l handLine) bool { return l.market == "match_winner" && l.match.String == m1 })
	if len(mw) == 0 || !mw[0].at.Equal(ts("2025-03-01T12:01:00Z")) {
		t.Fatalf("match_winner m-1 should start when the 2nd contributor prices: %+v", mw)
	}
	b1 := map[string]float64{"home": 1.55, "away": 2.45}
	b2 := map[string]float64{"home": 1.60, "away": 2.30}
	b3 := map[string]float64{"home": 1.50, "away": 2.60}
	b4 := map[string]float64{"home": 1.70, "away": 2.10}
	for _, o := range []string{"home", "away"} {
		check("A 2 books", mw, o, ts("2025-03-01T12:01:00Z"), map[string]map[string]float64{"1": b1, "2": b2})
		check("A 3 books", mw, o, ts("2025-03-01T12:02:00.125Z"), map[string]map[string]float64{"1": b1, "2": b2, "3": b3})
		check("A 4 books (even median)", mw, o, ts("2025-03-01T12:03:00Z"), map[string]map[string]float64{"1": b1, "2": b2, "3": b3, "4": b4})
	}
	// the even median is the mean of the two middle de-vigged values
	dv := func(q map[string]float64) float64 { return (1 / q["home"]) / (1/q["home"] + 1/q["away"]) }
	hs := []float64{dv(b1), dv(b2), dv(b3), dv(b4)}
	sort.Float64s(hs)
	mh := (hs[1] + hs[2]) / 2
	as := []float64{1 - dv(b1), 1 - dv(b2), 1 - dv(b3), 1 - dv(b4)}
	sort.Float64s(as)
	ma := (as[1] + as[2]) / 2
	for _, l := range mw {
		if l.outcome == "home" && l.at.Equal(ts("2025-03-01T12:03:00Z")) && !near(l.price, (mh+ma)/mh) {
			t.Errorf("even median: home %.12f, want %.12f", l.price, (mh+ma)/mh)
		}
	}
	// sub-second capture time kept
	if !series(mw, func(l handLine) bool { return l.at.Nanosecond() == 125e6 })[0].at.Equal(ts("2025-03-01T12:02:00.125Z")) {
		t.Error("sub-second captured_at lost")
	}
	// settlement: m-1 completed 2-0 => home won; closing is the last line
	// before scheduled_at, not the one after.
	for _, l := range mw {
		if !l.isWinner.Valid || l.isWinner.Bool != (l.outcome == "home") {
			t.Errorf("m-1 match_winner %s at %s: is_winner %v", l.outcome, l.at, l.isWinner)
		}
		wantClosing := l.at.Equal(ts("2025-03-01T12:03:00Z"))
		if l.isClosing != wantClosing {
			t.Errorf("m-1 match_winner %s at %s: is_closing %v, want %v", l.outcome, l.at, l.isClosing, wantClosing)
		}
		if l.label != map[string]string{"home": "Alpha Wolves", "away": "Bravo Reborn"}[l.outcome] {
			t.Errorf("label %q for %s", l.label, l.outcome)
		}
	}
	if n := len(series(mw, func(l handLine) bool { return l.at.Equal(ts("2025-03-02T15:30:00Z")) })); n != 2 {
		t.Errorf("the move after kickoff should publish both legs, got %d rows", n)
	}

	// B. white label: bk-2, bk-5, bk-6 are one contributor.
	tm := series(lines, func(l handLine) bool { return l.market == "total_maps" && l.line.Float64 == 2.5 })
	if len(tm) == 0 || !tm[0].at.Equal(ts("2025-03-01T12:10:00Z")) {
		t.Fatalf("total_maps 2.5 must not publish before a second independent contributor: %+v", tm)
	}
	for _, o := range []string{"over", "under"} {
		check("B copies count once", tm, o, ts("2025-03-01T12:10:00Z"), map[string]map[string]float64{
			"1": {"over": 1.90, "under": 1.90}, "2": {"over": 1.80, "under": 2.00}})
		check("B copy's latest capture", tm, o, ts("2025-03-01T12:20:00Z"), map[string]map[string]float64{
			"1": {"over": 1.90, "under": 1.90}, "2": {"over": 1.70, "under": 2.10}})
	}
	for _, l := range tm {
		if l.bookCount != 2 {
			t.Errorf("white label counted twice: book_count %d", l.bookCount)
		}
		// m-1 ended 2-0: 2 maps < 2.5, under wins
		if !l.isWinner.Valid || l.isWinner.Bool != (l.outcome == "under") {
			t.Errorf("total_maps 2.5 %s: is_winner %v", l.outcome, l.isWinner)
		}
		if l.label != map[string]string{"over": "Over 2.5", "under": "Under 2.5"}[l.outcome] {
			t.Errorf("label %q", l.label)
		}
	}
	if len(series(lines, func(l handLine) bool { return l.market == "total_maps" && l.line.Float64 == 1.5 })) != 2 {
		t.Error("total_maps 1.5 is its own market with its own two rows")
	}

	// C. a contributor that priced one outcome only is left out until it
	// prices the other.
	mh2 := series(lines, func(l handLine) bool { return l.market == "map_handicap" })
	if len(mh2) == 0 || !mh2[0].at.Equal(ts("2025-03-01T12:05:00Z")) {
		t.Fatalf("map_handicap must wait for two full contributors: %+v", mh2)
	}
	bh1 := map[string]float64{"home": 2.20, "away": 1.65}
	bh3 := map[string]float64{"home": 2.10, "away": 1.75}
	for _, o := range []string{"home", "away"} {
		check("C partial left out", mh2, o, ts("2025-03-01T12:05:00Z"), map[string]map[string]float64{"1": bh1, "3": bh3})
		check("C partial completes", mh2, o, ts("2025-03-01T12:06:00Z"), map[string]map[string]float64{"1": bh1, "3": bh3,
			"2": {"home": 2.40, "away": 1.55}})
	}
	for _, l := range mh2 {
		// 2 + (-1.5) > 0: home covers
		if !l.isWinner.Valid || l.isWinner.Bool != (l.outcome == "home") {
			t.Errorf("map_handicap %s: is_winner %v", l.outcome, l.isWinner)
		}
	}
	for _, l := range mh2 {
		if want := map[string]string{"home": "Alpha Wolves -1.5", "away": "Bravo Reborn +1.5"}[l.outcome]; l.label != want {
			t.Errorf("handicap label %q, want %q", l.label, want)
		}
	}

	// D. outright: the single-book outcome is not published.
	or := series(lines, func(l handLine) bool { return l.market == "outright" })
	if len(or) != 2 {
		t.Fatalf("outright: want tm-1 and tm-2 only, got %+v", or)
	}
	sum := 0.0
	for _, l := range or {
		if l.match.Valid || !l.tour.Valid || l.bookCount != 2 {
			t.Errorf("outright row %+v", l)
		}
		sum += 1 / l.price
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("outright probabilities sum to %v", sum)
	}
	// tr-1 still has a live match (m-2): the outright is not settled.
	for _, l := range or {
		if l.isWinner.Valid || l.isClosing {
			t.Errorf("outright %s settled while a match is live: %+v", l.label, l)
		}
	}

	// E. cancelled: history kept, never settles, closing flagged; scheduled:
	// unsettled and no closing line yet.
	c5 := series(lines, func(l handLine) bool { return l.match.String == m5 })
	if len(c5) == 0 {
		t.Fatal("a cancelled match keeps its odds history")
	}
	closing := 0
	for _, l := range c5 {
		if l.isWinner.Valid {
			t.Errorf("cancelled match line settled: %+v", l)
		}
		if l.isClosing {
			closing++
		}
	}
	if closing != 2 {
		t.Errorf("cancelled match: %d closing lines, want one per outcome", closing)
	}
	for _, l := range series(lines, func(l handLine) bool { return l.match.String == m3 }) {
		if l.isWinner.Valid || l.isClosing {
			t.Errorf("scheduled match line settled or closing: %+v", l)
		}
	}
}

// TestOddsNoBookLeaks: no book name or id appears in any exported file, in
// the raw bytes or in any decoded value, nor in the run's log.
func TestOddsNoBookLeaks(t *testing.T) {
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, map[raw.Entity][]string{raw.Books: handBooks, raw.PriceCaptures: handCaptures})
	var logBuf bytes.Buffer
	rep, err := pipelines.Run(context.Background(), pipelines.Options{Store: st, WorkDir: t.TempDir(),
		Logger: newTextLogger(&logBuf)})
	if err != nil {
		t.Fatal(err)
	}
	db := openOut(t, rep)
	if count(t, db, `SELECT count(*) FROM odds_lines`) == 0 {
		t.Fatal("no odds lines: the leak test would be vacuous")
	}
	scanBookLeaks(t, "pipeline log", logBuf.Bytes())
	for _, tf := range rep.Tables {
		b, err := os.ReadFile(tf.Path)
		if err != nil {
			t.Fatal(err)
		}
		scanBookLeaks(t, tf.Name+".parquet (bytes)", b)
		// decoded: every column of every row as text
		rows, err := db.Query(fmt.Sprintf(`SELECT CAST(columns(*) AS VARCHAR) FROM %s`, tf.Name))
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		var sb strings.Builder
		sb.WriteString(strings.Join(cols, "\t"))
		eachRow(t, rows, func(vals []any) {
			for _, v := range vals {
				sb.WriteByte('\t')
				if v != nil { // NULL: an empty field
					fmt.Fprint(&sb, v)
				}
			}
			sb.WriteByte('\n')
		})
		scanBookLeaks(t, tf.Name+" (decoded)", []byte(sb.String()))
	}
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func scanBookLeaks(t *testing.T, where string, b []byte) {
	t.Helper()
	for _, name := range handBookNames {
		if bytes.Contains(bytes.ToLower(b), bytes.ToLower([]byte(name))) {
			t.Errorf("%s names book %q", where, name)
		}
	}
}

// TestOddsSameBookSameInstantLastLandedWins: one book's two captures of an
// outcome at one instant, differing only in a field the market key ignores
// (a map_number on a match_winner market), are two raw records. The line
// takes the one landed last, whichever order they come in, as the live
// path keeps a book's later capture of an instant. Before, the pick between
// them was arbitrary.
func TestOddsSameBookSameInstantLastLandedWins(t *testing.T) {
	const at = "2025-03-01T12:01:00Z"
	withMap := func(line string) string {
		return strings.Replace(line, `"map_number":null`, `"map_number":1`, 1)
	}
	for _, c := range []struct {
		name        string
		first, last string
		want        float64 // bk-3's home price the line must use
	}{
		{"map_number first", withMap(capLine("bk-3", "match_winner", "m-1", "", "home", "", 1.50, at)),
			capLine("bk-3", "match_winner", "m-1", "", "home", "", 1.80, at), 1.80},
		{"map_number last", capLine("bk-3", "match_winner", "m-1", "", "home", "", 1.80, at),
			withMap(capLine("bk-3", "match_winner", "m-1", "", "home", "", 1.50, at)), 1.50},
	} {
		t.Run(c.name, func(t *testing.T) {
			caps := []string{
				c.first, c.last,
				capLine("bk-3", "match_winner", "m-1", "", "away", "", 2.60, at),
				capLine("bk-4", "match_winner", "m-1", "", "home", "", 1.70, at),
				capLine("bk-4", "match_winner", "m-1", "", "away", "", 2.10, at),
			}
			rep := runCaptures(t, caps)
			db := openOut(t, rep)
			var home float64
			if err := db.QueryRow(`SELECT price FROM odds_lines WHERE market = 'match_winner' AND outcome_key = 'home'
				AND source = 'eo_market' AND captured_at = ?::TIMESTAMPTZ`, at).Scan(&home); err != nil {
				t.Fatal(err)
			}
			// With the fixture's bk-1 (1.55/2.45 at 12:00:00.250): three
			// contributors at 12:01.
			want, _ := reference(map[string]map[string]float64{
				"1": {"home": 1.55, "away": 2.45},
				"3": {"home": c.want, "away": 2.60},
				"4": {"home": 1.70, "away": 2.10},
			})
			other, _ := reference(map[string]map[string]float64{
				"1": {"home": 1.55, "away": 2.45},
				"3": {"home": 1.50 + 1.80 - c.want, "away": 2.60},
				"4": {"home": 1.70, "away": 2.10},
			})
			if !near(home, want["home"]) {
				t.Errorf("home %.12f, want %.12f (bk-3 at %v, landed last); with the other capture it is %.12f",
					home, want["home"], c.want, other["home"])
			}
		})
	}
}

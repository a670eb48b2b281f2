package pipelines

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/marcboeker/go-duckdb/v2"
)

// gridReference is the eo_market series as sql/derive/00_odds.sql computed
// it before the Go walk (pipelines/odds.go): every instant of a market
// crossed with the (contributor, outcome) pairs priced by then, an as-of
// join for each cell's price, the per-contributor de-vig, the median per
// outcome and the renormalisation, then append-on-change. Kept here as the
// reference the walk must equal bit for bit.
const gridReference = `
CREATE OR REPLACE TEMP TABLE odds_grid AS
WITH moments AS (SELECT DISTINCT mi, captured_at AS t FROM odds_caps),
pairs AS (SELECT mi, contributor, outcome, min(captured_at) AS first_at FROM odds_caps GROUP BY ALL),
g AS (SELECT m.mi, m.t, p.contributor, p.outcome
      FROM moments m JOIN pairs p ON p.mi = m.mi AND p.first_at <= m.t)
SELECT g.mi, g.t, g.contributor, g.outcome, c.price
FROM g ASOF JOIN odds_caps c
  ON c.mi = g.mi AND c.contributor = g.contributor AND c.outcome = g.outcome AND c.captured_at <= g.t;
CREATE OR REPLACE TEMP TABLE odds_contrib AS
WITH n AS (
  SELECT mi, t, contributor, count(*) AS n, sum(1 / price) AS tot
  FROM odds_grid GROUP BY mi, t, contributor HAVING count(*) >= 2),
many AS (
  SELECT g.mi, g.t, g.contributor, list_sum(list(1 / g.price ORDER BY g.outcome)) AS tot
  FROM odds_grid g JOIN n ON n.mi = g.mi AND n.t = g.t AND n.contributor = g.contributor AND n.n > 2
  GROUP BY g.mi, g.t, g.contributor),
tot AS (
  SELECT mi, t, contributor, tot FROM n WHERE n = 2
  UNION ALL
  SELECT mi, t, contributor, tot FROM many)
SELECT g.mi, g.t, g.outcome, (1 / g.price) / tot.tot AS p
FROM odds_grid g JOIN tot USING (mi, t, contributor);
CREATE OR REPLACE TEMP TABLE odds_outcome AS
SELECT mi, t, outcome, median(p) AS med, CAST(count(*) AS INTEGER) AS book_count
FROM odds_contrib GROUP BY mi, t, outcome HAVING count(*) >= 2;
CREATE OR REPLACE TEMP TABLE odds_reference AS
WITH tot AS (
  SELECT mi, t, list_sum(list(med ORDER BY outcome)) AS tot
  FROM odds_outcome GROUP BY mi, t HAVING count(*) >= 2),
priced AS (
  SELECT o.mi, o.t, o.outcome, o.book_count, tot.tot / o.med AS price
  FROM odds_outcome o JOIN tot USING (mi, t)),
chg AS (
  SELECT *, lag(price) OVER (PARTITION BY mi, outcome ORDER BY t) AS prev FROM priced)
SELECT mi, t, outcome, book_count, price FROM chg
WHERE prev IS NULL OR prev <> price;
`

// TestOddsWalkEqualsTheSQLGrid: on random markets (two-way and outrights of
// up to 7 outcomes, up to 7 contributors, some pricing one leg only, many
// captures at shared instants), the walk publishes exactly the rows the
// SQL grid published, with the same price bits.
func TestOddsWalkEqualsTheSQLGrid(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TEMP TABLE odds_caps (mi INTEGER, contributor VARCHAR, outcome VARCHAR, captured_at TIMESTAMPTZ, price DOUBLE)`,
		`CREATE TEMP TABLE odds_markets (mi INTEGER)`,
		`CREATE TEMP TABLE odds_series (mi INTEGER, t TIMESTAMPTZ, oi INTEGER, book_count INTEGER, price DOUBLE)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(7, 17))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const markets = 2*oddsChunk + 500 // three chunks, the last one short
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	captures := 0
	err = conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppenderFromConn(dc.(*duckdb.Conn), "", "odds_caps")
		if err != nil {
			return err
		}
		mk, err := duckdb.NewAppenderFromConn(dc.(*duckdb.Conn), "", "odds_markets")
		if err != nil {
			return err
		}
		for mi := int32(1); mi <= markets; mi++ {
			outcomes := []string{"away", "home"}
			if mi%50 == 0 { // an outright: team ids as keys
				outcomes = nil
				for i := range 3 + rng.IntN(5) {
					outcomes = append(outcomes, fmt.Sprintf("0190%04x-team", i*7919%65536))
				}
			}
			contributors := 1 + rng.IntN(7)
			seen := map[string]bool{}
			for range 2 + rng.IntN(14) {
				c := fmt.Sprintf("bk-%02d", rng.IntN(contributors))
				o := outcomes[rng.IntN(len(outcomes))]
				at := t0.Add(time.Duration(rng.IntN(8)) * time.Minute) // few instants: many shared
				key := fmt.Sprint(c, o, at)
				if seen[key] {
					continue
				}
				seen[key] = true
				price := 1.01 + rng.Float64()*9
				if rng.IntN(4) == 0 {
					price = 1.5 + float64(rng.IntN(4))/4 // equal prices: equal probabilities and medians
				}
				if err := app.AppendRow(mi, c, o, at, price); err != nil {
					return err
				}
				captures++
			}
			if err := mk.AppendRow(mi); err != nil {
				return err
			}
		}
		if err := app.Close(); err != nil {
			return err
		}
		return mk.Close()
	})
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TEMP TABLE odds_outcome_keys AS SELECT outcome, CAST(row_number() OVER (ORDER BY outcome) - 1 AS INTEGER) AS oi FROM (SELECT DISTINCT outcome FROM odds_caps)`,
		`CREATE TEMP TABLE odds_contributor_keys AS SELECT contributor, CAST(row_number() OVER (ORDER BY contributor) - 1 AS INTEGER) AS ci FROM (SELECT DISTINCT contributor FROM odds_caps)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	r := &run{o: Options{Logger: slog.Default()}, rep: &Report{RunID: "test"}, db: db}
	n, err := r.oddsSeries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.execStatements(ctx, "reference", gridReference); err != nil {
		t.Fatal(err)
	}
	read := func(q string) []string {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var (
				mi, books int
				at        time.Time
				outcome   string
				price     float64
			)
			if err := rows.Scan(&mi, &at, &outcome, &books, &price); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d %s %s %d %016x", mi, at.UTC().Format(time.RFC3339), outcome, books, math.Float64bits(price)))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := read(`SELECT s.mi, s.t, o.outcome, s.book_count, s.price FROM odds_series s JOIN odds_outcome_keys o USING (oi) ORDER BY ALL`)
	want := read(`SELECT mi, t, outcome, book_count, price FROM odds_reference ORDER BY ALL`)
	if int64(len(got)) != n {
		t.Errorf("the walk reported %d rows and wrote %d", n, len(got))
	}
	if len(want) < captures/4 {
		t.Fatalf("only %d reference lines from %d captures: the random markets publish too little to compare", len(want), captures)
	}
	outrights := 0
	for _, l := range want {
		if strings.Contains(l, "-team") {
			outrights++
		}
	}
	if outrights == 0 {
		t.Fatal("no outright line in the reference")
	}
	if !slices.Equal(got, want) {
		shown := 0
		for i := 0; i < max(len(got), len(want)) && shown < 10; i++ {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("row %d: walk %q, grid %q", i, g, w)
				shown++
			}
		}
		t.Fatalf("the walk wrote %d rows, the grid %d", len(got), len(want))
	}
	t.Logf("%d captures in %d markets: %d lines, %d of them of outrights, equal to the bit", captures, markets, len(got), outrights)
}

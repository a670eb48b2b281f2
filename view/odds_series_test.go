package view

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/eodata/eo/tables"
)

// The series of the published file are runs of consecutive lines, found
// in one pass; lines in any other order (a table made by hand) are grouped
// through a map. Both must give every line the same open price and the
// same newest line of each series.
func TestOddsSeriesInAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var lines []OddsLine
	for m := range 6 {
		for _, src := range []string{"eo_market", "eo_model"} {
			for _, out := range []string{"a", "b"} {
				for k := range 5 {
					lines = append(lines, OddsLine{ID: tables.ID{byte(len(lines)), 7}, MarketID: tables.ID{byte(m), 1},
						Source: src, OutcomeKey: out, Price: 1 + rng.Float64(),
						CapturedAt: t0.Add(time.Duration(rng.IntN(50)+k) * time.Minute)})
				}
			}
		}
	}
	type result struct {
		open   map[tables.ID]float64 // line -> open price
		newest []tables.ID
	}
	resultOf := func(lines []OddsLine) result {
		r := result{open: map[tables.ID]float64{}}
		rows := prepareOdds(lines, false).x.rows
		for _, sr := range seriesOf(rows) {
			for i := range sr.all {
				r.open[rows[i].id] = rows[sr.first].price
				if rows[i].open != rows[sr.first].price {
					t.Fatalf("line %d: open price %v, its series' first %v", i, rows[i].open, rows[sr.first].price)
				}
			}
			r.newest = append(r.newest, rows[sr.last].id)
		}
		slices.SortFunc(r.newest, func(a, b tables.ID) int { return slices.Compare(a[:], b[:]) })
		return r
	}
	sorted := resultOf(lines)
	if len(sorted.open) != len(lines) || len(sorted.newest) != 6*2*2 {
		t.Fatalf("runs: %d lines priced, %d series, want %d and 24", len(sorted.open), len(sorted.newest), len(lines))
	}
	// The open price is the earliest line's, whatever its place in the run.
	rows := prepareOdds(lines, false).x.rows
	for _, sr := range seriesOf(rows) {
		for i := range sr.all {
			if before(&rows[i], &rows[sr.first]) || before(&rows[sr.last], &rows[i]) {
				t.Fatalf("line %d lies outside its series' first and last", i)
			}
		}
	}
	shuffled := slices.Clone(lines)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	got := resultOf(shuffled)
	if !slices.Equal(got.newest, sorted.newest) {
		t.Fatalf("newest lines differ in another order:\n%v\n%v", got.newest, sorted.newest)
	}
	for id, p := range sorted.open {
		if got.open[id] != p {
			t.Fatalf("line %v: open price %v in another order, %v in runs", id, got.open[id], p)
		}
	}
}

package view

import (
	"testing"
	"time"

	"github.com/eodata/eo/tables"
)

// BenchmarkOddsPage: a 100-line page of one match's odds history (500
// lines): the lines are kept compact and rendered per request (oddsrow.go),
// which this measures; the page cache answers repeated URIs above this.
func BenchmarkOddsPage(b *testing.B) {
	s := testSnapshot("bench", func(t *loaded) {
		t.odds = t.odds[:0]
		bc := 7
		for i := range 500 {
			m := m1
			outcome := "home"
			if i%2 == 1 {
				outcome = "away"
			}
			t.odds = append(t.odds, OddsLine{ID: tables.ID{0x91, byte(i >> 8), byte(i)}, MatchID: &m, MarketID: mkt1,
				Market: "match_winner", Source: "eo_market", BookCount: &bc, OutcomeKey: outcome, Label: outcome,
				Price: 1.5 + float64(i%50)/100, CapturedAt: t0.Add(-time.Duration(500-i) * time.Minute)})
		}
	})
	v := New(s)
	b.ReportAllocs()
	for b.Loop() {
		p := v.OddsPage(m1, "", nil, 100)
		if len(p.Rows) != 100 {
			b.Fatalf("%d rows", len(p.Rows))
		}
		p.Release()
	}
}

package live

import (
	"context"
	"log/slog"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/market"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/synth"
)

// recSink lands records in a batch and keeps the books and price captures.
type recSink struct {
	b     *raw.Batch
	books []raw.Book
	caps  []raw.PriceCapture
}

func (s *recSink) Add(e raw.Entity, rec any) error {
	switch r := rec.(type) {
	case raw.Book:
		s.books = append(s.books, r)
	case raw.PriceCapture:
		s.caps = append(s.caps, r)
	}
	return s.b.Add(e, rec)
}

type seriesRow struct {
	market, marketID, outcome string
	at                        time.Time
	price                     float64
	bookCount                 int
}

// TestLiveAgreesWithBatch feeds the same captures through the batch
// pipeline (sql/derive/00_odds*.sql and its Go walk) and through the live
// aggregator, and requires the same published series: same market ids,
// outcomes, instants and book counts, and prices to the bit (both run
// package market; what this holds is the keying around it: contributors,
// markets, the order captures are applied in).
func TestLiveAgreesWithBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline")
	}
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var sink *recSink
	st, err := worldtest.Local(ctx, dir, synth.Options{Seed: 11, Now: now, Matches: 80}, func(b *raw.Batch) synth.Sink {
		sink = &recSink{b: b}
		return sink
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: filepath.Join(dir, "work"),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	db := worldtest.OpenTables(t, rep.Tables)

	ids := map[string]string{}
	rows, err := db.Query(`SELECT upstream_id, CAST(id AS VARCHAR) FROM live_ids WHERE kind = 'match'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var up, id string
		if err := rows.Scan(&up, &id); err != nil {
			t.Fatal(err)
		}
		ids[up] = id
	}
	rows.Close()
	if len(ids) == 0 {
		t.Fatal("live_ids has no match")
	}

	var batch []seriesRow
	rows, err = db.Query(`SELECT market, CAST(market_id AS VARCHAR), outcome_key, captured_at, price, book_count
		FROM odds_lines WHERE source = 'eo_market' AND match_id IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r seriesRow
		if err := rows.Scan(&r.market, &r.marketID, &r.outcome, &r.at, &r.price, &r.bookCount); err != nil {
			t.Fatal(err)
		}
		r.at = r.at.UTC()
		batch = append(batch, r)
	}
	rows.Close()

	// The Go side: the same captures, per market in capture order, every
	// capture of one instant applied before the market is evaluated.
	root := map[string]string{}
	for _, bk := range sink.books {
		root[bk.ID] = bk.ID
		if bk.CopiesBook != "" {
			root[bk.ID] = bk.CopiesBook
		}
	}
	caps := sink.caps
	sort.SliceStable(caps, func(i, j int) bool { return caps[i].CapturedAt.Before(caps[j].CapturedAt) })
	agg := NewAggregator()
	var goRows []seriesRow
	for i := 0; i < len(caps); {
		j := i
		touched := map[market.Key]bool{}
		var order []market.Key
		for ; j < len(caps) && caps[j].CapturedAt.Equal(caps[i].CapturedAt); j++ {
			c := caps[j]
			id, ok := ids[c.MatchID]
			if c.Market == "outright" || !ok {
				continue
			}
			k := market.Key{Market: c.Market, MatchID: id}
			if c.Market == "map_winner" && c.MapNumber != nil {
				k.MapNumber = *c.MapNumber
			}
			if c.Line != nil {
				k.Line, k.HasLine = *c.Line, true
			}
			agg.Apply(k, market.Quote{Contributor: root[c.Book], Book: c.Book, Outcome: c.Outcome, Price: c.Price, At: c.CapturedAt})
			if !touched[k] {
				touched[k] = true
				order = append(order, k)
			}
		}
		for _, k := range order {
			for _, l := range agg.Evaluate(k, caps[i].CapturedAt) {
				goRows = append(goRows, seriesRow{market: k.Market, marketID: k.ID().String(), outcome: l.Outcome,
					at: l.At.UTC(), price: l.Price, bookCount: l.Books})
			}
		}
		i = j
	}

	key := func(r seriesRow) string { return r.marketID + "|" + r.outcome + "|" + r.at.Format(time.RFC3339Nano) }
	got := map[string]seriesRow{}
	for _, r := range goRows {
		got[key(r)] = r
	}
	if len(batch) < 50 {
		t.Fatalf("the batch published only %d eo_market match rows; the fixture is too small to compare", len(batch))
	}
	markets := map[string]bool{}
	bad := 0
	for _, want := range batch {
		markets[want.market] = true
		g, ok := got[key(want)]
		switch {
		case !ok:
			t.Errorf("batch row missing live: %s %s %s at %s price %.12f", want.market, want.marketID, want.outcome, want.at, want.price)
			bad++
		case g.price != want.price || g.bookCount != want.bookCount:
			t.Errorf("%s %s at %s: live %.12f (%d books), batch %.12f (%d books)", want.market, want.outcome, want.at,
				g.price, g.bookCount, want.price, want.bookCount)
			bad++
		}
		delete(got, key(want))
		if bad > 10 {
			t.FailNow()
		}
	}
	for _, r := range got {
		t.Errorf("live row the batch did not publish: %s %s %s at %s price %.12f", r.market, r.marketID, r.outcome, r.at, r.price)
		if bad++; bad > 10 {
			t.FailNow()
		}
	}
	for _, m := range []string{"match_winner", "total_maps", "map_handicap", "map_winner"} {
		if !markets[m] {
			t.Errorf("the fixture has no %s lines; the comparison does not cover it", m)
		}
	}
	t.Logf("compared %d eo_market rows over %d captures", len(batch), len(caps))
}

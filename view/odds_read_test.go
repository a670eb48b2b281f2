package view

import (
	"bytes"
	"cmp"
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/eodata/eo/internal/testkit/parquettest"
	"github.com/eodata/eo/tables"
)

// TestReadOddsRowGroupAtATime reads an odds_lines file in the published
// layout (ids as text, the pipeline's column types), cut into row groups
// that split series, on two workers, as a load does (readOdds), and holds
// the index to what the lines say, worked out here without it:
//   - every row renders as encoding/json renders its line, with the open
//     price of the earliest line of its (market, outcome, source) series;
//   - the newest line of each series, newest first;
//   - each match's history, captured_at then id descending;
//   - the settled markets and each row's source.
func TestReadOddsRowGroupAtATime(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	id := func() tables.ID {
		var v tables.ID
		for i := range v {
			v[i] = byte(r.UintN(256))
		}
		return v
	}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var lines []OddsLine
	for range 60 { // matches, and (one in six) outright tournaments
		mid, tid := id(), id()
		outright := r.IntN(6) == 0
		for _, market := range []string{"match_winner", "map_handicap", "total_maps"}[:1+r.IntN(3)] {
			mkt := id()
			settled := r.IntN(3) == 0
			for _, src := range []string{"eo_market", "eo_model"} {
				for _, out := range []string{"away", "home", "over"}[:2+r.IntN(2)] {
					for k := range 1 + r.IntN(40) {
						l := OddsLine{ID: id(), MarketID: mkt, Market: market, Source: src, OutcomeKey: out,
							Label: "Label " + out, Price: 1 + r.Float64()*3, IsClosing: r.IntN(9) == 0,
							// minutes apart, a few at the same instant (ordered by id then)
							CapturedAt: t0.Add(time.Duration(r.IntN(500)+k) * time.Minute)}
						if outright {
							l.TournamentID = &tid
						} else {
							l.MatchID = &mid
						}
						if market != "match_winner" {
							n, line := 1+r.IntN(3), float64(r.IntN(5))-2.5
							l.MapNumber, l.Line = &n, &line
						}
						if src == "eo_model" {
							v := "m1"
							l.ModelVersion = &v
						} else {
							n := 1 + r.IntN(9)
							l.BookCount = &n
						}
						if settled {
							w := out == "home"
							l.IsWinner = &w
						}
						lines = append(lines, l)
					}
				}
			}
		}
	}
	// The file's order: by match, market, source, outcome (each series a
	// run), in any order of time within the run.
	path := filepath.Join(t.TempDir(), "odds_lines.parquet")
	writeOddsLines(t, path, lines, 37)

	p, err := readOdds(context.Background(), path, 2)
	if err != nil {
		t.Fatal(err)
	}
	x := p.x
	if len(x.rows) != len(lines) {
		t.Fatalf("%d rows for %d lines", len(x.rows), len(lines))
	}
	type skey struct {
		market          tables.ID
		outcome, source string
	}
	earlier := func(a, b *OddsLine) bool {
		return a.CapturedAt.Before(b.CapturedAt) || a.CapturedAt.Equal(b.CapturedAt) && bytes.Compare(a.ID[:], b.ID[:]) < 0
	}
	first, last := map[skey]int{}, map[skey]int{}
	for i := range lines {
		l := &lines[i]
		k := skey{l.MarketID, l.OutcomeKey, l.Source}
		if f, ok := first[k]; !ok || earlier(l, &lines[f]) {
			first[k] = i
		}
		if n, ok := last[k]; !ok || earlier(&lines[n], l) {
			last[k] = i
		}
	}
	settled := map[tables.ID]bool{}
	for i := range lines {
		l := lines[i]
		l.OpenPrice = lines[first[skey{l.MarketID, l.OutcomeKey, l.Source}]].Price
		l.DeltaSinceOpen = l.Price - l.OpenPrice
		if got, want := x.appendLine(nil, int32(i)), mustJSON(&l); !bytes.Equal(got, want) {
			t.Fatalf("row %d:\n got %s\nwant %s", i, got, want)
		}
		if x.sources[x.src[i]] != l.Source {
			t.Fatalf("row %d: source %q, want %q", i, x.sources[x.src[i]], l.Source)
		}
		if l.IsWinner != nil {
			settled[l.MarketID] = true
		}
	}
	if len(p.settled) != len(settled) {
		t.Fatalf("%d settled markets, want %d", len(p.settled), len(settled))
	}
	for m := range settled {
		if !p.settled[m] {
			t.Fatalf("market %v not settled", m)
		}
	}
	var newest []int32
	for _, i := range last {
		newest = append(newest, int32(i))
	}
	slices.SortFunc(newest, func(a, b int32) int {
		if earlier(&lines[a], &lines[b]) {
			return 1
		}
		return -1
	})
	if !slices.Equal(p.latest, newest) {
		t.Fatalf("newest line of each series:\n got %v\nwant %v", p.latest, newest)
	}
	history := map[tables.ID][]int32{}
	for i := range lines {
		if m := lines[i].MatchID; m != nil {
			history[*m] = append(history[*m], int32(i))
		}
	}
	if len(x.byMatch) != len(history) {
		t.Fatalf("history of %d matches, want %d", len(x.byMatch), len(history))
	}
	for m, rows := range history {
		slices.SortFunc(rows, func(a, b int32) int {
			la, lb := &lines[a], &lines[b]
			return cmp.Or(lb.CapturedAt.Compare(la.CapturedAt), bytes.Compare(lb.ID[:], la.ID[:]))
		})
		if got := x.byMatch[m].idx; !slices.Equal(got, rows) {
			t.Fatalf("match %v history:\n got %v\nwant %v", m, got, rows)
		}
	}
}

// writeOddsLines writes lines as the pipeline publishes odds_lines (ids as
// text), groupRows rows a row group.
func writeOddsLines(t *testing.T, path string, lines []OddsLine, groupRows int64) {
	t.Helper()
	str, i32, f64, bl := arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Boolean
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: str, Nullable: true}, {Name: "match_id", Type: str, Nullable: true},
		{Name: "tournament_id", Type: str, Nullable: true}, {Name: "market_id", Type: str, Nullable: true},
		{Name: "market", Type: str, Nullable: true}, {Name: "map_number", Type: i32, Nullable: true},
		{Name: "source", Type: str, Nullable: true}, {Name: "model_version", Type: str, Nullable: true},
		{Name: "book_count", Type: i32, Nullable: true}, {Name: "outcome_key", Type: str, Nullable: true},
		{Name: "label", Type: str, Nullable: true}, {Name: "participant_type", Type: str, Nullable: true},
		{Name: "participant_id", Type: str, Nullable: true}, {Name: "line", Type: f64, Nullable: true},
		{Name: "price", Type: f64, Nullable: true}, {Name: "is_winner", Type: bl, Nullable: true},
		{Name: "is_closing", Type: bl, Nullable: true},
		{Name: "captured_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(groupRows))
	parquettest.Write(t, path, schema, props, func(b *array.RecordBuilder) { appendOddsLines(b, lines) })
}

// appendOddsLines appends lines to a record of writeOddsLines' schema.
func appendOddsLines(b *array.RecordBuilder, lines []OddsLine) {
	idText := func(v *tables.ID) *string {
		if v == nil {
			return nil
		}
		s := v.String()
		return &s
	}
	i32p := func(k int, v *int) {
		if v == nil {
			b.Field(k).AppendNull()
		} else {
			b.Field(k).(*array.Int32Builder).Append(int32(*v))
		}
	}
	for i := range lines {
		l := &lines[i]
		parquettest.AppendString(b.Field(0).(*array.StringBuilder), idText(&l.ID))
		parquettest.AppendString(b.Field(1).(*array.StringBuilder), idText(l.MatchID))
		parquettest.AppendString(b.Field(2).(*array.StringBuilder), idText(l.TournamentID))
		parquettest.AppendString(b.Field(3).(*array.StringBuilder), idText(&l.MarketID))
		parquettest.AppendString(b.Field(4).(*array.StringBuilder), &l.Market)
		i32p(5, l.MapNumber)
		parquettest.AppendString(b.Field(6).(*array.StringBuilder), &l.Source)
		parquettest.AppendString(b.Field(7).(*array.StringBuilder), l.ModelVersion)
		i32p(8, l.BookCount)
		parquettest.AppendString(b.Field(9).(*array.StringBuilder), &l.OutcomeKey)
		parquettest.AppendString(b.Field(10).(*array.StringBuilder), &l.Label)
		parquettest.AppendString(b.Field(11).(*array.StringBuilder), l.ParticipantType)
		parquettest.AppendString(b.Field(12).(*array.StringBuilder), idText(l.ParticipantID))
		if l.Line == nil {
			b.Field(13).AppendNull()
		} else {
			b.Field(13).(*array.Float64Builder).Append(*l.Line)
		}
		b.Field(14).(*array.Float64Builder).Append(l.Price)
		if l.IsWinner == nil {
			b.Field(15).AppendNull()
		} else {
			b.Field(15).(*array.BooleanBuilder).Append(*l.IsWinner)
		}
		b.Field(16).(*array.BooleanBuilder).Append(l.IsClosing)
		b.Field(17).(*array.TimestampBuilder).Append(arrow.Timestamp(l.CapturedAt.UnixMicro()))
	}
}

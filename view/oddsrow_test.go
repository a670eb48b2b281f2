package view

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/eodata/eo/tables"
)

// TestOddsLinesRenderAsEncodingJSON holds the per-request renderer of odds
// history byte-identical to encoding/json on the row type, over random
// lines: every optional field present and absent, floats of every
// magnitude (exponent forms included), hostile strings (HTML characters,
// line separators, invalid UTF-8, control bytes) and sub-second times.
func TestOddsLinesRenderAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"home", "away", "Over 2.5", "Team <A> & \"B\"", "line\u2028sep\u2029", "bad\xffutf8", "tab\tnl\n\x01",
		"Ünïcødé 名前", ""}
	pick := func() string { return strs[r.IntN(len(strs))] }
	floats := []float64{0, 1, 1.85, 2.0500000000000003, -0.25, 1e-7, 1.5e-6, 123456789012345678901234.0, 1e21, 1e20,
		math.SmallestNonzeroFloat64, math.MaxFloat64, -3.4e-9}
	fl := func() float64 {
		if r.IntN(3) == 0 {
			return floats[r.IntN(len(floats))]
		}
		return math.Float64frombits(r.Uint64()>>2 | 0x3ff0000000000000>>1) // finite, varied
	}
	id := func() tables.ID {
		var v tables.ID
		for i := range v {
			v[i] = byte(r.UintN(256))
		}
		return v
	}
	maybe := func() bool { return r.IntN(2) == 0 }
	var lines []OddsLine
	for k := 0; k < 3000; k++ {
		l := OddsLine{ID: id(), MarketID: id(), Market: pick(), Source: pick(), OutcomeKey: pick(), Label: pick(),
			Price: fl(), IsClosing: maybe(),
			CapturedAt: time.Unix(int64(r.IntN(2e9)), int64(r.IntN(3))*int64(r.IntN(1e9))).UTC()}
		l.MatchID = maybeOf(r, id)
		l.TournamentID = maybeOf(r, id)
		l.MapNumber = maybeOf(r, func() int { return r.IntN(5) })
		l.ModelVersion = maybeOf(r, pick)
		l.BookCount = maybeOf(r, func() int { return r.IntN(40) })
		l.ParticipantType = maybeOf(r, pick)
		l.ParticipantID = maybeOf(r, id)
		l.Line = maybeOf(r, fl)
		l.IsWinner = maybeOf(r, maybe)
		lines = append(lines, l)
	}
	s := testSnapshot("render", func(t *loaded) { t.odds = lines })
	if len(s.odds.rows) != len(lines) {
		t.Fatalf("%d rows for %d lines", len(s.odds.rows), len(lines))
	}
	for i := range lines { // build set OpenPrice and DeltaSinceOpen in place
		want := mustJSON(&lines[i])
		if got := s.odds.appendLine(nil, int32(i)); !bytes.Equal(got, want) {
			t.Fatalf("line %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// maybeOf is, one time in two, a pointer to a value from gen; else nil.
func maybeOf[T any](r *rand.Rand, gen func() T) *T {
	if r.IntN(2) != 0 {
		return nil
	}
	v := gen()
	return &v
}

// TestOddsLineNotFiniteIsCorrupt: a price that has no JSON form fails the
// load (as rendering it did), it is not served as null.
func TestOddsLineNotFiniteIsCorrupt(t *testing.T) {
	tb := testTables()
	tb.odds[0].Price = math.NaN()
	if _, err := buildSafely(Meta{ID: "nan"}, tb); err == nil {
		t.Fatal("a NaN price loaded")
	}
}

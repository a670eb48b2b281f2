package live

import (
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/eodata/eo/devig"
)

func q(contrib, book, outcome string, price float64, at time.Time) Quote {
	return Quote{Contributor: contrib, Book: book, Outcome: outcome, Price: price, CapturedAt: at}
}

// devigLeg is one contributor's normalised probability of the first leg.
func devigLeg(h, a float64) float64 { return (1 / h) / (1/h + 1/a) }

func TestAggregateRules(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	k := MarketKey{Market: "match_winner", MatchID: "0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"}
	a := NewAggregator()

	// One contributor: nothing published.
	if got := a.Add(k, q("bk-01", "bk-01", "home", 1.80, t0)); len(got) != 0 {
		t.Fatalf("one leg of one book published %v", got)
	}
	if got := a.Add(k, q("bk-01", "bk-01", "away", 2.05, t0)); len(got) != 0 {
		t.Fatalf("one contributor published %v", got)
	}
	// A white label copying bk-01 is the same contributor: still nothing.
	a.Apply(k, q("bk-01", "bk-06", "home", 1.80, t0.Add(time.Second)))
	if got := a.Evaluate(k, t0.Add(time.Second)); len(got) != 0 {
		t.Fatalf("a white label counted as a second contributor: %v", got)
	}
	// A contributor with only one leg cannot be de-vigged: still nothing.
	if got := a.Add(k, q("bk-02", "bk-02", "home", 1.70, t0.Add(2*time.Second))); len(got) != 0 {
		t.Fatalf("a one-legged contributor counted: %v", got)
	}
	// Its second leg makes two contributors: published, both legs.
	t3 := t0.Add(3 * time.Second)
	got := a.Add(k, q("bk-02", "bk-02", "away", 2.20, t3))
	if len(got) != 2 {
		t.Fatalf("want both legs, got %v", got)
	}
	p1, p2 := devigLeg(1.80, 2.05), devigLeg(1.70, 2.20)
	medH := (p1 + p2) / 2 // even count: mean of the two middle values
	medA := ((1 - p1) + (1 - p2)) / 2
	wantH := 1 / (medH / (medH + medA))
	wantA := 1 / (medA / (medH + medA))
	for _, l := range got {
		want := wantH
		if l.Outcome == "away" {
			want = wantA
		}
		if math.Abs(l.Price-want) > 1e-12 || l.BookCount != 2 || !l.CapturedAt.Equal(t3) {
			t.Errorf("%s: price %.12f book_count %d at %v; want %.12f, 2, %v", l.Outcome, l.Price, l.BookCount, l.CapturedAt, want, t3)
		}
		if l.MarketID != MarketID(k) {
			t.Errorf("market id %s, want %s", l.MarketID, MarketID(k))
		}
	}
	if s := 1/got[0].Price + 1/got[1].Price; math.Abs(s-1) > 1e-12 {
		t.Errorf("implied probabilities sum to %v", s)
	}
	// Append-on-change: re-evaluating without a change publishes nothing.
	if got := a.Evaluate(k, t0.Add(4*time.Second)); len(got) != 0 {
		t.Errorf("no change, yet published %v", got)
	}
	// An older quote does not replace a newer one.
	if got := a.Add(k, q("bk-02", "bk-02", "away", 9.0, t0)); len(got) != 0 {
		t.Errorf("an out-of-order older quote changed the line: %v", got)
	}
	// A third contributor: odd count takes the middle value; book_count 3.
	t5 := t0.Add(5 * time.Second)
	a.Apply(k, q("bk-03", "bk-03", "home", 1.50, t5))
	a.Apply(k, q("bk-03", "bk-03", "away", 2.60, t5))
	got = a.Evaluate(k, t5)
	p3 := devigLeg(1.50, 2.60)
	ps := []float64{p1, p2, p3}
	mid := devig.Median(slices.Clone(ps))
	as := []float64{1 - p1, 1 - p2, 1 - p3}
	midA := devig.Median(slices.Clone(as))
	if len(got) != 2 || got[1].Outcome != "home" || got[1].BookCount != 3 || math.Abs(got[1].Price-1/(mid/(mid+midA))) > 1e-12 {
		t.Errorf("three contributors: %+v (want home %.12f)", got, 1/(mid/(mid+midA)))
	}
	if latest := a.Latest(k.MatchID); len(latest) != 2 || !latest[0].CapturedAt.Equal(t5) {
		t.Errorf("latest: %+v", latest)
	}
}

func TestSameInstantSourceBookWins(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	k := MarketKey{Market: "match_winner", MatchID: "m"}
	a := NewAggregator()
	a.Apply(k, q("bk-01", "bk-01", "home", 1.80, t0))
	a.Apply(k, q("bk-01", "bk-06", "home", 1.90, t0)) // the copy at the same instant
	a.Apply(k, q("bk-01", "bk-01", "away", 2.00, t0))
	a.Apply(k, q("bk-02", "bk-02", "home", 1.80, t0))
	a.Apply(k, q("bk-02", "bk-02", "away", 2.00, t0))
	got := a.Evaluate(k, t0)
	if len(got) != 2 || got[1].Outcome != "home" {
		t.Fatalf("%+v", got)
	}
	if math.Abs(1/got[1].Price-devigLeg(1.8, 2.0)) > 1e-12 {
		t.Errorf("the copy's price won over the source's at the same instant: %+v", got)
	}
}

// Two white labels of one book, and not the book, price an outcome at the
// same instant: the batch takes the smaller book id's price, in whatever
// order the captures arrive.
func TestSameInstantSmallestCopyWins(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	k := MarketKey{Market: "match_winner", MatchID: "m"}
	for _, order := range [][]Quote{
		{q("bk-01", "bk-07", "home", 1.95, t0), q("bk-01", "bk-06", "home", 1.80, t0)},
		{q("bk-01", "bk-06", "home", 1.80, t0), q("bk-01", "bk-07", "home", 1.95, t0)},
	} {
		a := NewAggregator()
		for _, x := range order {
			a.Apply(k, x)
		}
		a.Apply(k, q("bk-01", "bk-06", "away", 2.00, t0))
		a.Apply(k, q("bk-02", "bk-02", "home", 1.80, t0))
		a.Apply(k, q("bk-02", "bk-02", "away", 2.00, t0))
		got := a.Evaluate(k, t0)
		if len(got) != 2 || got[1].Outcome != "home" || math.Abs(1/got[1].Price-devigLeg(1.8, 2.0)) > 1e-12 {
			t.Errorf("arrival %s then %s: %+v; want bk-06's 1.80 to count", order[0].Book, order[1].Book, got)
		}
	}
}

func TestIDsMatchTheBatchShape(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	id := MarketID(MarketKey{Market: "total_maps", MatchID: "x", Line: 2.5, HasLine: true})
	if !re.MatchString(id) {
		t.Errorf("market id %q is not a v7-shaped uuid", id)
	}
	if id == MarketID(MarketKey{Market: "total_maps", MatchID: "x", Line: 3.5, HasLine: true}) {
		t.Error("lines 2.5 and 3.5 share a market id")
	}
	for in, want := range map[float64]string{2.5: "2.5", -1.5: "-1.5", 3: "3.0"} {
		if got := DuckDouble(in); got != want {
			t.Errorf("DuckDouble(%v) = %q, want %q", in, got, want)
		}
	}
}

// The captures of one instant can arrive in two batches: evaluated again at
// that instant, the market replaces the instant's line (same id) or, when
// the instant no longer changes the price, retracts it, so the published
// lines equal one evaluation with every capture, as the batch makes.
func TestEvaluateAnInstantAgain(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	k := MarketKey{Market: "match_winner", MatchID: "0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"}
	quotes := func(a *Aggregator, at time.Time, books ...string) {
		for i, b := range books {
			a.Apply(k, q(b, b, "home", 1.60+0.1*float64(i), at))
			a.Apply(k, q(b, b, "away", 2.40-0.1*float64(i), at))
		}
	}
	// One evaluation with the three books of t1: the reference.
	ref := NewAggregator()
	quotes(ref, t0, "bk-01", "bk-02")
	ref.Evaluate(k, t0)
	t1 := t0.Add(time.Second)
	quotes(ref, t1, "bk-01", "bk-02", "bk-03")
	want := ref.Evaluate(k, t1)

	// The same captures, t1's in two batches.
	a := NewAggregator()
	quotes(a, t0, "bk-01", "bk-02")
	a.Evaluate(k, t0)
	a.Apply(k, q("bk-01", "bk-01", "home", 1.70, t1)) // bk-01 moves first, alone
	a.Apply(k, q("bk-01", "bk-01", "away", 2.30, t1))
	first := a.Evaluate(k, t1)
	if len(first) != 2 || first[0].ID() != want[0].ID() {
		t.Fatalf("first evaluation of t1: %+v", first)
	}
	quotes(a, t1, "bk-01", "bk-02", "bk-03")
	again := a.Evaluate(k, t1)
	if len(again) != 2 {
		t.Fatalf("evaluated again: %+v, want the two legs replaced", again)
	}
	for i := range want {
		if again[i].ID() != want[i].ID() || again[i].Price != want[i].Price || again[i].BookCount != 3 || again[i].Retract {
			t.Fatalf("leg %s: %+v, want %+v", want[i].Outcome, again[i], want[i])
		}
	}
	// A third batch of the same instant that restores t0's prices: the
	// instant changes nothing any more, so its lines are retracted.
	b := NewAggregator()
	quotes(b, t0, "bk-01", "bk-02")
	before := b.Evaluate(k, t0)
	b.Apply(k, q("bk-01", "bk-01", "home", 1.90, t1))
	b.Apply(k, q("bk-01", "bk-01", "away", 2.00, t1))
	moved := b.Evaluate(k, t1)
	quotes(b, t1, "bk-01") // bk-01 back to its t0 prices, at t1
	back := b.Evaluate(k, t1)
	if len(moved) != 2 || len(back) != 2 || !back[0].Retract || back[0].ID() != moved[0].ID() {
		t.Fatalf("moved %+v, then back %+v: want t1's lines retracted", moved, back)
	}
	if latest := b.Latest(k.MatchID); latest[0].Price != before[0].Price || !latest[0].CapturedAt.Equal(t0) {
		t.Fatalf("after the retraction the latest line is %+v, want t0's", latest[0])
	}
}

// Books' feeds are not in step: a capture can arrive after a later capture
// of another book. Whatever the delivery order, the price the live path
// serves for each outcome (its line with the newest captured_at, lines
// replaced by id and retracted as the view applies them) is the price the
// batch serves: each outcome's last published price, the market evaluated
// as of every capture instant. Before, a late capture was evaluated at its
// own instant: its line went into the history, the head kept the stale
// price, and append-on-change kept it served until the next snapshot.
func TestLateCapturesMoveTheServedPrice(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	k := MarketKey{Market: "match_winner", MatchID: "0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"}
	books := []string{"bk-01", "bk-02", "bk-03", "bk-04"}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 9))
		// Each book prices both legs at some of 12 instants.
		type capture struct {
			q       Quote
			arrives time.Duration
		}
		var caps []capture
		for i := range 12 {
			at := t0.Add(time.Duration(i) * 10 * time.Second)
			for _, b := range books {
				if i > 0 && rng.IntN(3) == 0 {
					continue
				}
				lag := time.Duration(rng.IntN(4)) * 10 * time.Second // a slow feed, now and then
				h := 1.3 + rng.Float64()
				caps = append(caps, capture{q("b"+b, b, "home", h, at), lag},
					capture{q("b"+b, b, "away", 1/(1.06-1/h), at), lag})
			}
		}
		// The batch: as of every instant, append-on-change.
		want := map[string]float64{}
		for i := range 12 {
			at := t0.Add(time.Duration(i) * 10 * time.Second)
			quotes := map[string]map[string]Quote{}
			for _, c := range caps {
				if !c.q.CapturedAt.After(at) {
					if quotes[c.q.Contributor] == nil {
						quotes[c.q.Contributor] = map[string]Quote{}
					}
					if cur, ok := quotes[c.q.Contributor][c.q.Outcome]; !ok || !c.q.CapturedAt.Before(cur.CapturedAt) {
						quotes[c.q.Contributor][c.q.Outcome] = c.q
					}
				}
			}
			prices, _ := Aggregate(quotes)
			maps.Copy(want, prices)
		}
		// The live path: captures delivered by arrival time, in batches of
		// what arrived together, each market evaluated at the newest
		// capture of the batch (Tracker.Apply).
		slices.SortStableFunc(caps, func(a, b capture) int {
			return a.q.CapturedAt.Add(a.arrives).Compare(b.q.CapturedAt.Add(b.arrives))
		})
		a := NewAggregator()
		served := map[string]MarketLine{} // line id -> line, as the view holds them
		for i := 0; i < len(caps); {
			arrival := caps[i].q.CapturedAt.Add(caps[i].arrives)
			var newest time.Time
			for ; i < len(caps) && caps[i].q.CapturedAt.Add(caps[i].arrives).Equal(arrival); i++ {
				a.Apply(k, caps[i].q)
				if caps[i].q.CapturedAt.After(newest) {
					newest = caps[i].q.CapturedAt
				}
			}
			for _, l := range a.Evaluate(k, newest) {
				if l.Retract {
					delete(served, l.ID())
				} else {
					served[l.ID()] = l
				}
			}
		}
		got := map[string]MarketLine{}
		for _, l := range served {
			if h, ok := got[l.Outcome]; !ok || l.CapturedAt.After(h.CapturedAt) {
				got[l.Outcome] = l
			}
		}
		for o, w := range want {
			if got[o].Price != w {
				t.Fatalf("seed %d: %s served at %.6f (line of %s), the batch's price is %.6f", seed, o, got[o].Price,
					got[o].CapturedAt.Format("15:04:05"), w)
			}
		}
	}
}

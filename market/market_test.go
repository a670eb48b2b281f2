package market

import (
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
	"time"
)

func q(contrib, book, outcome string, price float64, at time.Time) Quote {
	return Quote{Contributor: contrib, Book: book, Outcome: outcome, Price: price, At: at}
}

// add applies a quote and evaluates the market at its instant.
func (s *State) add(x Quote) []Line {
	s.Apply(x)
	return s.Evaluate(x.At)
}

// devigLeg is one contributor's normalised probability of the first leg.
func devigLeg(h, a float64) float64 { return (1 / h) / (1/h + 1/a) }

func TestAggregateRules(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := &State{}

	// One contributor: nothing published.
	if got := a.add(q("bk-01", "bk-01", "home", 1.80, t0)); len(got) != 0 {
		t.Fatalf("one leg of one book published %v", got)
	}
	if got := a.add(q("bk-01", "bk-01", "away", 2.05, t0)); len(got) != 0 {
		t.Fatalf("one contributor published %v", got)
	}
	// A white label copying bk-01 is the same contributor: still nothing.
	a.Apply(q("bk-01", "bk-06", "home", 1.80, t0.Add(time.Second)))
	if got := a.Evaluate(t0.Add(time.Second)); len(got) != 0 {
		t.Fatalf("a white label counted as a second contributor: %v", got)
	}
	// A contributor with only one leg cannot be de-vigged: still nothing.
	if got := a.add(q("bk-02", "bk-02", "home", 1.70, t0.Add(2*time.Second))); len(got) != 0 {
		t.Fatalf("a one-legged contributor counted: %v", got)
	}
	// Its second leg makes two contributors: published, both legs.
	t3 := t0.Add(3 * time.Second)
	got := a.add(q("bk-02", "bk-02", "away", 2.20, t3))
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
		if math.Abs(l.Price-want) > 1e-12 || l.Books != 2 || !l.At.Equal(t3) {
			t.Errorf("%s: price %.12f book_count %d at %v; want %.12f, 2, %v", l.Outcome, l.Price, l.Books, l.At, want, t3)
		}
	}
	if s := 1/got[0].Price + 1/got[1].Price; math.Abs(s-1) > 1e-12 {
		t.Errorf("implied probabilities sum to %v", s)
	}
	// Append-on-change: re-evaluating without a change publishes nothing.
	if got := a.Evaluate(t0.Add(4 * time.Second)); len(got) != 0 {
		t.Errorf("no change, yet published %v", got)
	}
	// An older quote does not replace a newer one.
	if got := a.add(q("bk-02", "bk-02", "away", 9.0, t0)); len(got) != 0 {
		t.Errorf("an out-of-order older quote changed the line: %v", got)
	}
	// A third contributor: odd count takes the middle value; book_count 3.
	t5 := t0.Add(5 * time.Second)
	a.Apply(q("bk-03", "bk-03", "home", 1.50, t5))
	a.Apply(q("bk-03", "bk-03", "away", 2.60, t5))
	got = a.Evaluate(t5)
	p3 := devigLeg(1.50, 2.60)
	ps := []float64{p1, p2, p3}
	mid := Median(slices.Clone(ps))
	as := []float64{1 - p1, 1 - p2, 1 - p3}
	midA := Median(slices.Clone(as))
	if len(got) != 2 || got[1].Outcome != "home" || got[1].Books != 3 || math.Abs(got[1].Price-1/(mid/(mid+midA))) > 1e-12 {
		t.Errorf("three contributors: %+v (want home %.12f)", got, 1/(mid/(mid+midA)))
	}
	if latest := a.Latest(); len(latest) != 2 || !latest[0].At.Equal(t5) {
		t.Errorf("latest: %+v", latest)
	}
}

func TestSameInstantSourceBookWins(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := &State{}
	a.Apply(q("bk-01", "bk-01", "home", 1.80, t0))
	a.Apply(q("bk-01", "bk-06", "home", 1.90, t0)) // the copy at the same instant
	a.Apply(q("bk-01", "bk-01", "away", 2.00, t0))
	a.Apply(q("bk-02", "bk-02", "home", 1.80, t0))
	a.Apply(q("bk-02", "bk-02", "away", 2.00, t0))
	got := a.Evaluate(t0)
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
	for _, order := range [][]Quote{
		{q("bk-01", "bk-07", "home", 1.95, t0), q("bk-01", "bk-06", "home", 1.80, t0)},
		{q("bk-01", "bk-06", "home", 1.80, t0), q("bk-01", "bk-07", "home", 1.95, t0)},
	} {
		a := &State{}
		for _, x := range order {
			a.Apply(x)
		}
		a.Apply(q("bk-01", "bk-06", "away", 2.00, t0))
		a.Apply(q("bk-02", "bk-02", "home", 1.80, t0))
		a.Apply(q("bk-02", "bk-02", "away", 2.00, t0))
		got := a.Evaluate(t0)
		if len(got) != 2 || got[1].Outcome != "home" || math.Abs(1/got[1].Price-devigLeg(1.8, 2.0)) > 1e-12 {
			t.Errorf("arrival %s then %s: %+v; want bk-06's 1.80 to count", order[0].Book, order[1].Book, got)
		}
	}
}

// Ids are v7-shaped UUIDs of their keys, lines are part of a market's key,
// and the text of a line is the shortest decimal with ".0" on a whole
// number (what the published market ids were minted from).
func TestIDsAndLabels(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	k := Key{Market: "total_maps", MatchID: "x", Line: 2.5, HasLine: true}
	id := k.ID()
	if !re.MatchString(id.String()) {
		t.Errorf("market id %q is not a v7-shaped uuid", id)
	}
	if id == (Key{Market: "total_maps", MatchID: "x", Line: 3.5, HasLine: true}).ID() {
		t.Error("lines 2.5 and 3.5 share a market id")
	}
	// The ids of the published snapshots: eo_uuid of the pipeline's key text.
	if got := UUIDFromKey("market\x00match_winner\x00m\x00\x00\x00").String(); got != (Key{Market: "match_winner", MatchID: "m"}).ID().String() {
		t.Errorf("a key's id %s, its text's %s", (Key{Market: "match_winner", MatchID: "m"}).ID(), got)
	}
	if got := UUIDFromKey("abc").String(); got != "ba7816bf-8f01-7fea-8141-40de5dae2223" {
		t.Errorf("UUIDFromKey(abc) = %s (SHA-256 ba7816bf8f01cfea414140de5dae2223…)", got)
	}
	for in, want := range map[float64]string{2.5: "2.5", -1.5: "-1.5", 3: "3.0"} {
		if got := FormatLine(in); got != want {
			t.Errorf("FormatLine(%v) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		k           Key
		outcome     string
		label, kind string
		who         string
	}{
		{Key{Market: "match_winner"}, "away", "B", "team", "b-id"},
		{Key{Market: "total_maps", Line: 2.5, HasLine: true}, "over", "Over 2.5", "", ""},
		{Key{Market: "total_maps"}, "under", "", "", ""},
		{Key{Market: "map_handicap", Line: -1.5, HasLine: true}, "home", "A -1.5", "team", "a-id"},
		{Key{Market: "map_handicap", Line: -1.5, HasLine: true}, "away", "B +1.5", "team", "b-id"},
		{Key{Market: "map_winner", MapNumber: 2}, "home", "A (map 2)", "team", "a-id"},
		{Key{Market: "outright"}, "t-id", "A", "team", "t-id"},
	} {
		if got := Label(c.k, c.outcome, "A", "B"); got != c.label {
			t.Errorf("%s %s: label %q, want %q", c.k.Market, c.outcome, got, c.label)
		}
		if kind, who := Participant(c.k, c.outcome, "a-id", "b-id"); kind != c.kind || who != c.who {
			t.Errorf("%s %s: participant %q %q, want %q %q", c.k.Market, c.outcome, kind, who, c.kind, c.who)
		}
	}
}

// The captures of one instant can arrive in two batches: evaluated again at
// that instant, the market replaces the instant's line (same id) or, when
// the instant no longer changes the price, retracts it, so the published
// lines equal one evaluation with every capture, as the batch makes.
func TestEvaluateAnInstantAgain(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	quotes := func(a *State, at time.Time, books ...string) {
		for i, b := range books {
			a.Apply(q(b, b, "home", 1.60+0.1*float64(i), at))
			a.Apply(q(b, b, "away", 2.40-0.1*float64(i), at))
		}
	}
	// One evaluation with the three books of t1: the reference.
	ref := &State{}
	quotes(ref, t0, "bk-01", "bk-02")
	ref.Evaluate(t0)
	t1 := t0.Add(time.Second)
	quotes(ref, t1, "bk-01", "bk-02", "bk-03")
	want := ref.Evaluate(t1)

	// The same captures, t1's in two batches.
	a := &State{}
	quotes(a, t0, "bk-01", "bk-02")
	a.Evaluate(t0)
	a.Apply(q("bk-01", "bk-01", "home", 1.70, t1)) // bk-01 moves first, alone
	a.Apply(q("bk-01", "bk-01", "away", 2.30, t1))
	first := a.Evaluate(t1)
	if len(first) != 2 || !first[0].At.Equal(want[0].At) {
		t.Fatalf("first evaluation of t1: %+v", first)
	}
	quotes(a, t1, "bk-01", "bk-02", "bk-03")
	again := a.Evaluate(t1)
	if len(again) != 2 {
		t.Fatalf("evaluated again: %+v, want the two legs replaced", again)
	}
	for i := range want {
		if !again[i].At.Equal(want[i].At) || again[i].Outcome != want[i].Outcome || again[i].Price != want[i].Price || again[i].Books != 3 || again[i].Retract {
			t.Fatalf("leg %s: %+v, want %+v", want[i].Outcome, again[i], want[i])
		}
	}
	// A third batch of the same instant that restores t0's prices: the
	// instant changes nothing any more, so its lines are retracted.
	b := &State{}
	quotes(b, t0, "bk-01", "bk-02")
	before := b.Evaluate(t0)
	b.Apply(q("bk-01", "bk-01", "home", 1.90, t1))
	b.Apply(q("bk-01", "bk-01", "away", 2.00, t1))
	moved := b.Evaluate(t1)
	quotes(b, t1, "bk-01") // bk-01 back to its t0 prices, at t1
	back := b.Evaluate(t1)
	if len(moved) != 2 || len(back) != 2 || !back[0].Retract || !back[0].At.Equal(moved[0].At) {
		t.Fatalf("moved %+v, then back %+v: want t1's lines retracted", moved, back)
	}
	if latest := b.Latest(); latest[0].Price != before[0].Price || !latest[0].At.Equal(t0) {
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
				if !c.q.At.After(at) {
					if quotes[c.q.Contributor] == nil {
						quotes[c.q.Contributor] = map[string]Quote{}
					}
					if cur, ok := quotes[c.q.Contributor][c.q.Outcome]; !ok || !c.q.At.Before(cur.At) {
						quotes[c.q.Contributor][c.q.Outcome] = c.q
					}
				}
			}
			// a fresh market of the quotes as of at, evaluated once
			var m State
			for _, byOutcome := range quotes {
				for _, x := range byOutcome {
					m.Apply(x)
				}
			}
			for _, l := range m.Evaluate(at) {
				want[l.Outcome] = l.Price
			}
		}
		// The live path: captures delivered by arrival time, in batches of
		// what arrived together, each market evaluated at the newest
		// capture of the batch (Tracker.Apply).
		slices.SortStableFunc(caps, func(a, b capture) int {
			return a.q.At.Add(a.arrives).Compare(b.q.At.Add(b.arrives))
		})
		a := &State{}
		served := map[string]Line{} // line id (outcome, instant) -> line, as the view holds them
		for i := 0; i < len(caps); {
			arrival := caps[i].q.At.Add(caps[i].arrives)
			var newest time.Time
			for ; i < len(caps) && caps[i].q.At.Add(caps[i].arrives).Equal(arrival); i++ {
				a.Apply(caps[i].q)
				if caps[i].q.At.After(newest) {
					newest = caps[i].q.At
				}
			}
			for _, l := range a.Evaluate(newest) {
				if id := l.Outcome + l.At.String(); l.Retract {
					delete(served, id)
				} else {
					served[id] = l
				}
			}
		}
		got := map[string]Line{}
		for _, l := range served {
			if h, ok := got[l.Outcome]; !ok || l.At.After(h.At) {
				got[l.Outcome] = l
			}
		}
		for o, w := range want {
			if got[o].Price != w {
				t.Fatalf("seed %d: %s served at %.6f (line of %s), the batch's price is %.6f", seed, o, got[o].Price,
					got[o].At.Format("15:04:05"), w)
			}
		}
	}
}

package synth

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/eodata/eo/raw"
)

// seriesP is the probability that the side winning each map with p wins a
// best-of-n series.
func seriesP(p float64, bestOf int) float64 {
	q := 1 - p
	switch bestOf {
	case 3:
		return p * p * (3 - 2*p)
	case 5:
		return p * p * p * (1 + 3*q + 6*q*q)
	}
	return p
}

func roundPrice(x float64) float64 {
	if x < 2.5 {
		return round3(x)
	}
	return round2(x)
}

// twoWay prices a two-outcome market with belief q for the first outcome.
func twoWay(q, margin float64) (float64, float64) {
	hi := 1 / (1.02 * (1 + margin))
	q = min(max(q, 1-hi), hi)
	return roundPrice(1 / (q * (1 + margin))), roundPrice(1 / ((1 - q) * (1 + margin)))
}

type market struct {
	name     string
	mapNum   *int
	line     *float64
	legs     [2]string
	oneLeg   bool
	from     int // first reprice index that prices it
	prob     func(p float64) float64
	last     [2]float64
	hasPrice bool
}

// bookOrder picks the books pricing one event: 2-4 independent ones, plus the
// white label whenever its source prices.
func bookOrder(r *rand.Rand, lo, hi int) []int {
	n := lo + r.IntN(hi-lo+1)
	perm := r.Perm(5)[:n]
	sort.Ints(perm)
	if perm[0] == 0 {
		perm = append(perm, 5)
	}
	return perm
}

// repriceTimes returns k increasing capture moments in [from, to] with
// millisecond precision.
func repriceTimes(r *rand.Rand, k int, from, to time.Time) []time.Time {
	span := to.Sub(from)
	if span < time.Duration(k)*time.Minute {
		span = time.Duration(k) * time.Minute
	}
	ts := make([]time.Time, k)
	ts[0] = from
	ts[k-1] = from.Add(span)
	for i := 1; i < k-1; i++ {
		u := r.Float64()
		ts[i] = from.Add(time.Duration(math.Sqrt(u) * float64(span)))
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	for i := range ts {
		ts[i] = ts[i].Add(time.Duration(r.IntN(60000)) * time.Millisecond).Truncate(time.Millisecond)
		if i > 0 && ts[i].Sub(ts[i-1]) < 10*time.Second {
			ts[i] = ts[i-1].Add(10*time.Second + time.Duration(r.IntN(5000))*time.Millisecond)
		}
	}
	return ts
}

func (w *world) capture(pc raw.PriceCapture, copyDelay time.Duration) error {
	if pc.CapturedAt.After(w.now) {
		return nil
	}
	if err := w.add(raw.PriceCaptures, pc); err != nil {
		return err
	}
	w.sum.PriceCaptures++
	if pc.Book == "bk-01" {
		pc.Book = "bk-06"
		pc.CapturedAt = pc.CapturedAt.Add(copyDelay)
		if pc.CapturedAt.After(w.now) {
			return nil
		}
		if err := w.add(raw.PriceCaptures, pc); err != nil {
			return err
		}
		w.sum.PriceCaptures++
	}
	return nil
}

func (w *world) emitPrices(r *rand.Rand, m *match) error {
	open := m.sched.Add(-time.Duration(48*60+r.IntN(5*24*60)) * time.Minute)
	if lim := m.announce.Add(10 * time.Minute); open.Before(lim) {
		open = lim
	}
	if open.After(w.now) {
		return nil
	}
	mk := matchMarkets(r, m.bestOf, m.pTrue)
	end := m.sched.Add(-time.Duration(5+r.IntN(85)) * time.Minute)
	stop := w.now // books stop pricing a cancelled match when it is called off
	if m.cancelled && m.cancelAt.Before(stop) {
		stop = m.cancelAt
	}
	for _, bi := range bookOrder(r, 2, 4) {
		if bi == 5 {
			continue // the white label copies bk-01 in capture
		}
		if err := w.priceBook(r, m, books[bi], mk, open, end, stop); err != nil {
			return err
		}
	}
	return nil
}

// matchMarkets lists a match's markets with each outcome's probability as
// a function of the map-win probability: match winner, and beyond a bo1
// total maps, map handicap (the underdog gets +1.5) and each map's winner.
func matchMarkets(r *rand.Rand, bo int, p float64) []*market {
	var mk []*market
	mk = append(mk, &market{name: "match_winner", legs: [2]string{"home", "away"},
		prob: func(q float64) float64 { return seriesP(q, bo) }})
	if bo == 1 {
		return mk
	}
	line := 2.5
	over := func(q float64) float64 { return 2 * q * (1 - q) }
	if bo == 5 {
		if r.IntN(2) == 0 {
			line = 3.5
			over = func(q float64) float64 { return 1 - q*q*q - (1-q)*(1-q)*(1-q) }
		} else {
			line = 4.5
			over = func(q float64) float64 { return 6 * q * q * (1 - q) * (1 - q) }
		}
	}
	mk = append(mk, &market{name: "total_maps", line: fp(line), legs: [2]string{"over", "under"}, prob: over})
	hl := -1.5
	if p < 0.5 {
		hl = 1.5
	}
	hcap := func(q float64) float64 {
		x := 1 - q
		switch {
		case bo == 3 && hl < 0:
			return q * q
		case bo == 3:
			return 1 - x*x
		case hl < 0:
			return q*q*q + 3*q*q*q*x
		}
		return 1 - (x*x*x + 3*x*x*x*q)
	}
	mk = append(mk, &market{name: "map_handicap", line: fp(hl), legs: [2]string{"home", "away"}, prob: hcap})
	for i := 1; i <= bo; i++ {
		mk = append(mk, &market{name: "map_winner", mapNum: ip(i), legs: [2]string{"home", "away"},
			prob: func(q float64) float64 { return q }})
	}
	return mk
}

// priceBook lands one book's captures of a match's markets: k reprices
// between its start and end (none after stop), its error shrinking towards
// kick-off; secondary markets priced from a later reprice on.
func (w *world) priceBook(r *rand.Rand, m *match, bk book, mk []*market, open, end, stop time.Time) error {
	k := 3 + r.IntN(6)
	start := open.Add(time.Duration(r.IntN(6*60)) * time.Minute)
	if !start.Before(end) {
		start = end.Add(-time.Duration(k) * time.Minute)
	}
	ts := repriceTimes(r, k, start, end)
	e0 := r.NormFloat64() * bk.noise / 1.4
	sec := r.Float64() < 0.85
	kSec := max(0, k-2-r.IntN(3))
	kMap := max(0, k-1-r.IntN(2))
	for i, x := range mk {
		x.hasPrice = false
		x.oneLeg = i > 0 && r.Float64() < 0.05
		x.from = 0
		if i > 0 {
			x.from = kSec
			if x.name == "map_winner" {
				x.from = kMap
			}
		}
	}
	for ci, t := range ts {
		if t.After(stop) {
			break
		}
		frac := float64(ci) / float64(k-1)
		e := e0*(1-0.8*frac) + r.NormFloat64()*0.03
		qm := logistic(logit(min(max(m.pTrue, 1e-4), 1-1e-4)) + e)
		delay := time.Duration(2000+r.IntN(7000)) * time.Millisecond
		for i, x := range mk {
			if i > 0 && (!sec || ci < x.from) {
				continue
			}
			if err := w.captureMarket(m, bk, x, qm, t, delay); err != nil {
				return err
			}
		}
	}
	return nil
}

// captureMarket lands one reprice of market x: each leg whose price moved.
func (w *world) captureMarket(m *match, bk book, x *market, qm float64, t time.Time, delay time.Duration) error {
	h, a := twoWay(x.prob(qm), bk.margin)
	pr := [2]float64{h, a}
	for leg := 0; leg < 2; leg++ {
		if leg == 1 && x.oneLeg {
			continue
		}
		if x.hasPrice && x.last[leg] == pr[leg] {
			continue
		}
		if err := w.capture(raw.PriceCapture{Book: bk.id, Market: x.name, MatchID: m.id, MapNumber: x.mapNum,
			Outcome: x.legs[leg], Line: x.line, Price: pr[leg], CapturedAt: t}, delay); err != nil {
			return err
		}
	}
	x.last = pr
	x.hasPrice = true
	return nil
}

// emitOutright prices the tournament winner market before the event starts.
func (w *world) emitOutright(r *rand.Rand, tp *tplan, parts []int) error {
	s := make([]float64, len(parts))
	tot := 0.0
	for i, ti := range parts {
		s[i] = math.Exp(math.Ln10 / 400 * 1.6 * w.strength(ti, tp.start))
		tot += s[i]
	}
	end := tp.start.Add(-time.Duration(30+r.IntN(600)) * time.Minute)
	from := tp.start.AddDate(0, 0, -10)
	if from.Before(tp.announce) {
		from = tp.announce.Add(time.Hour)
	}
	for _, bi := range bookOrder(r, 2, 3) {
		if bi == 5 {
			continue
		}
		bk := books[bi]
		k := 2 + r.IntN(3)
		ts := repriceTimes(r, k, from.Add(time.Duration(r.IntN(24*60))*time.Minute), end)
		noise := make([]float64, len(parts))
		for i := range noise {
			noise[i] = r.NormFloat64() * 0.3
		}
		last := make([]float64, len(parts))
		om := 0.1 + 3*bk.margin
		for ci, t := range ts {
			if t.After(w.now) {
				break
			}
			decay := 1 - 0.7*float64(ci)/float64(max(k-1, 1))
			q := make([]float64, len(parts))
			qt := 0.0
			for i := range parts {
				q[i] = s[i] / tot * math.Exp(noise[i]*decay)
				qt += q[i]
			}
			delay := time.Duration(2000+r.IntN(7000)) * time.Millisecond
			for i, ti := range parts {
				pr := max(1.01, round2(1/(q[i]/qt*(1+om))))
				if pr == last[i] {
					continue
				}
				last[i] = pr
				if err := w.capture(raw.PriceCapture{Book: bk.id, Market: "outright", TournamentID: tp.id,
					Outcome: w.teams[ti].id, Price: pr, CapturedAt: t}, delay); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

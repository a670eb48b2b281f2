package model

import (
	"math"
	"sort"
	"time"
)

// The Elo baseline eo_model is judged against, in `eo validate` (validate/)
// and in the pipeline's model review (Compare): Elo on the logistic 400
// scale with a K factor and a team-A advantage H, both tuned on earlier
// matches only.

// Default Elo grids searched by TuneElo.
var (
	DefaultEloKGrid = []float64{8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80}
	DefaultEloHGrid = []float64{-40, -20, -10, 0, 10, 20, 30, 40, 60, 80}
)

// Elo's values when there is nothing to tune on.
const (
	DefaultEloK = 24
	DefaultEloH = 0
)

// EloGame is one completed match for the Elo baseline: forecast at At, its
// result known at KnownAt (not before At).
type EloGame struct {
	TeamA, TeamB string
	At, KnownAt  time.Time
	WinnerA      bool
}

func (g EloGame) outcome() float64 {
	if g.WinnerA {
		return 1
	}
	return 0
}

// EloForecasts runs Elo over gs walk-forward and returns each game's
// forecast p = 1/(1+10^(-(R_A - R_B + h)/400)). Like Run, events go in time
// order: a forecast at each game's At, a result at its KnownAt, and at
// equal times every forecast before any result, so a forecast never uses a
// result that was not known strictly before it. Results update
// R += k (score - p), p from the current ratings, in time order and then
// in the order of gs. New teams start at 1500.
//
// The harness of `eo validate` gives every game At = KnownAt = its day:
// the games of a day are all forecast from the previous days' results.
func EloForecasts(gs []EloGame, k, h float64) []float64 {
	type ev struct {
		at     time.Time
		result bool
		i      int
	}
	evs := make([]ev, 0, 2*len(gs))
	for i, g := range gs {
		known := g.KnownAt
		if known.Before(g.At) {
			known = g.At
		}
		evs = append(evs, ev{g.At, false, i}, ev{known, true, i})
	}
	sort.SliceStable(evs, func(a, b int) bool {
		x, y := evs[a], evs[b]
		if !x.at.Equal(y.at) {
			return x.at.Before(y.at)
		}
		if x.result != y.result {
			return !x.result
		}
		return x.i < y.i
	})
	rt := map[string]float64{}
	get := func(id string) float64 {
		if v, ok := rt[id]; ok {
			return v
		}
		return 1500
	}
	exp := func(a, b string) float64 { return 1 / (1 + math.Pow(10, -(get(a)-get(b)+h)/400)) }
	out := make([]float64, len(gs))
	for _, e := range evs {
		g := gs[e.i]
		if !e.result {
			out[e.i] = exp(g.TeamA, g.TeamB)
			continue
		}
		d := k * (g.outcome() - exp(g.TeamA, g.TeamB))
		rt[g.TeamA] = get(g.TeamA) + d
		rt[g.TeamB] = get(g.TeamB) - d
	}
	return out
}

// TuneElo returns the (K, H) of the grids whose Elo forecasts of gs have
// the lowest Brier score (the first in grid order on a tie); with no game,
// DefaultEloK and DefaultEloH.
func TuneElo(gs []EloGame, kGrid, hGrid []float64) (k, h float64) {
	k, h = DefaultEloK, DefaultEloH
	if len(gs) == 0 {
		return k, h
	}
	best := math.Inf(1)
	for _, kk := range kGrid {
		for _, hh := range hGrid {
			p := EloForecasts(gs, kk, hh)
			s := 0.0
			for i, g := range gs {
				d := p[i] - g.outcome()
				s += d * d
			}
			if b := s / float64(len(gs)); b < best-1e-12 {
				best, k, h = b, kk, hh
			}
		}
	}
	return k, h
}

// TuningSplit is where a tuning period ends when none is given: the first
// day (UTC) of the month after the time of the first fifth of times
// (sorted ascending); the zero time when times is empty.
func TuningSplit(times []time.Time) time.Time {
	if len(times) == 0 {
		return time.Time{}
	}
	t := times[len(times)/5].UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0)
}

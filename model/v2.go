package model

import (
	"math"
	"sort"
	"time"
)

// v2 holds eo_model 2.0's component ratings and its stacker during Run.
type v2 struct {
	cfg    StackConfig
	cols   []string
	mapR   *batchRatings
	perfR  *batchRatings
	n      map[string]int
	maps   map[string]int // maps played so far (for MapDecay)
	ranks  rankBook
	lineup map[string][]string
	st     stacker
}

func newV2(cfg StackConfig) *v2 {
	if cfg.RefitMonths <= 0 {
		cfg.RefitMonths = 1
	}
	cols := cfg.columns()
	return &v2{cfg: cfg, cols: cols, mapR: newBatchRatings(), perfR: newBatchRatings(), n: map[string]int{}, maps: map[string]int{},
		ranks: rankBook{rank: map[string]int{}, at: map[string]time.Time{}}, lineup: map[string][]string{},
		st: stacker{cols: cols}}
}

func (v *v2) enabled() bool { return len(v.cols) > 0 }

// advance closes the rating periods before period k.
func (v *v2) advance(k int64) {
	v.mapR.advance(k)
	v.perfR.advance(k)
}

// features is the stacker's input for m from what is known now; raw is the
// Glicko-2 expected score.
func (v *v2) features(m *Match, raw float64) []float64 {
	x := make([]float64, 0, len(v.cols))
	scale := v.cfg.MapScale
	if scale <= 0 {
		scale = 1
	}
	pm := logistic(scale * (v.mapR.current(m.TeamA) - v.mapR.current(m.TeamB)))
	if v.cfg.has(FeatFormat) {
		pm = SeriesProbability(pm, m.Format)
	}
	rank, known := v.ranks.feature(m.TeamA, m.TeamB)
	for _, c := range v.cols {
		switch c {
		case FeatGlicko:
			x = append(x, logit(raw))
		case FeatMap:
			x = append(x, logit(pm))
		case FeatBo1:
			b := 0.0
			if m.Format == "bo1" {
				b = logit(pm)
			}
			x = append(x, b)
		case FeatRank:
			x = append(x, rank)
		case FeatRankKnown:
			k := 0.0
			if known {
				k = 1
			}
			x = append(x, k)
		case FeatExp:
			x = append(x, math.Log1p(float64(v.n[m.TeamA]))-math.Log1p(float64(v.n[m.TeamB])))
		case FeatPerf:
			x = append(x, v.perfR.current(m.TeamA)-v.perfR.current(m.TeamB))
		}
	}
	return x
}

// result learns m's result (y = 1 when team A won); x is m's forecast input.
func (v *v2) result(m *Match, x []float64, y float64) {
	for _, side := range []struct {
		team    string
		players []string
	}{{m.TeamA, m.PlayersA}, {m.TeamB, m.PlayersB}} {
		if len(side.players) == 0 {
			continue
		}
		if c := lineupChange(v.lineup[side.team], side.players); c > 0 && v.cfg.RosterShrink > 0 {
			f := math.Min(1, v.cfg.RosterShrink*float64(c)/5)
			v.mapR.shrink(side.team, f)
			v.perfR.shrink(side.team, f)
		}
		v.lineup[side.team] = side.players
	}
	d := v.mapR.base[m.TeamA] - v.mapR.base[m.TeamB]
	k := v.cfg.MapK
	if v.cfg.MapDecay > 0 {
		k /= math.Sqrt(1 + float64(v.maps[m.TeamA]+v.maps[m.TeamB])/2/v.cfg.MapDecay)
	}
	delta := 0.0
	for _, mp := range mapsOf(m) {
		delta += k * (mapScore(mp, v.cfg.RoundWeight) - logistic(d))
		v.maps[m.TeamA]++
		v.maps[m.TeamB]++
	}
	v.mapR.add(m.TeamA, m.TeamB, delta)
	if p := m.Perf; p != nil && p.KillsA+p.KillsB > 0 {
		share := p.KillsA / (p.KillsA + p.KillsB)
		e := logistic(v.perfR.base[m.TeamA] - v.perfR.base[m.TeamB])
		v.perfR.add(m.TeamA, m.TeamB, v.cfg.PerfK*(share-e))
	}
	v.n[m.TeamA]++
	v.n[m.TeamB]++
	if v.enabled() {
		v.st.xs = append(v.st.xs, x)
		v.st.ys = append(v.st.ys, y)
		v.st.mo = append(v.st.mo, monthIndex(resultAt(m)))
	}
}

// forecast is the stacked probability at time at, refitting the stacker
// first when a refit is due; ok is false while it has too little history.
func (v *v2) forecast(x []float64, at time.Time) (float64, bool) {
	if !v.enabled() || len(v.st.ys) < max(v.cfg.MinTrain, 1) {
		return 0, false
	}
	mi := monthIndex(at)
	if !v.st.fitted || mi >= v.st.month+v.cfg.RefitMonths {
		from := 0
		if v.cfg.WindowMonths > 0 {
			// rows are in result order: skip those before the window
			from = sort.SearchInts(v.st.mo, mi-v.cfg.WindowMonths)
		}
		v.st.w = FitLogisticN(v.st.xs[from:], v.st.ys[from:], v.cfg.Ridge, v.st.w, 30)
		v.st.fitted, v.st.month = true, mi
	}
	return v.st.predict(x), true
}

package model

import (
	"math"
	"slices"
	"sort"
	"time"
)

// v2 holds eo_model 2.0's component ratings and its stacker during Run.
type v2 struct {
	cfg    StackConfig
	cols   []string
	mapKs  []float64       // the map-level steps: MapKGrid, else MapK
	mapR   []*batchRatings // one map-level rating per step
	perfR  *batchRatings
	n      map[string]int
	maps   map[string]int // maps played so far (for MapDecay)
	ranks  rankBook
	lineup map[string][]string
	st     stacker
	pick   int // the map-level step in use (index into mapKs)
}

func newV2(cfg StackConfig) *v2 {
	if cfg.RefitMonths <= 0 {
		cfg.RefitMonths = 1
	}
	cols := cfg.columns()
	ks := cfg.MapKGrid
	if len(ks) == 0 {
		ks = []float64{cfg.MapK}
	}
	mr := make([]*batchRatings, len(ks))
	for i := range mr {
		mr[i] = newBatchRatings()
	}
	return &v2{cfg: cfg, cols: cols, mapKs: ks, mapR: mr, perfR: newBatchRatings(), n: map[string]int{}, maps: map[string]int{},
		ranks: rankBook{rank: map[string]int{}, at: map[string]time.Time{}}, lineup: map[string][]string{},
		st: stacker{cols: cols}}
}

func (v *v2) enabled() bool { return len(v.cols) > 0 }

// usesRanks reports whether a forecast reads the published ranks.
func (v *v2) usesRanks() bool {
	return slices.Contains(v.cols, FeatRank) || slices.Contains(v.cols, FeatRankKnown)
}

// advance closes the rating periods before period k.
func (v *v2) advance(k int64) {
	for _, r := range v.mapR {
		r.advance(k)
	}
	v.perfR.advance(k)
}

// mapP is the map-level rating's probability for m with step i (the
// series probability of m's format with FeatFormat).
func (v *v2) mapP(m *Match, i int) float64 {
	scale := v.cfg.MapScale
	if scale <= 0 {
		scale = 1
	}
	pm := logistic(scale * (v.mapR[i].current(m.TeamA) - v.mapR[i].current(m.TeamB)))
	if v.cfg.has(FeatFormat) {
		pm = SeriesProbability(pm, m.Format)
	}
	return pm
}

// features is the stacker's input for m from what is known now; raw is the
// Glicko-2 expected score. The map column is one column per map-level step
// (the stacker uses one of them: stacker.view).
func (v *v2) features(m *Match, raw float64) []float64 {
	x := make([]float64, 0, len(v.cols)+len(v.mapKs)-1)
	pm := v.mapP(m, len(v.mapKs)-1)
	rank, known := v.ranks.feature(m.TeamA, m.TeamB)
	for _, c := range v.cols {
		switch c {
		case FeatGlicko:
			x = append(x, logit(raw))
		case FeatMap:
			for i := range v.mapKs {
				x = append(x, logit(v.mapP(m, i)))
			}
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
			for _, r := range v.mapR {
				r.shrink(side.team, f)
			}
			v.perfR.shrink(side.team, f)
		}
		v.lineup[side.team] = side.players
	}
	decay := 1.0
	if v.cfg.MapDecay > 0 {
		decay = math.Sqrt(1 + float64(v.maps[m.TeamA]+v.maps[m.TeamB])/2/v.cfg.MapDecay)
	}
	for i, r := range v.mapR {
		d := r.base[m.TeamA] - r.base[m.TeamB]
		delta := 0.0
		for _, mp := range mapsOf(m) {
			delta += v.mapKs[i] / decay * (mapScore(mp, v.cfg.RoundWeight) - logistic(d))
		}
		r.add(m.TeamA, m.TeamB, delta)
	}
	n := len(mapsOf(m))
	v.maps[m.TeamA] += n
	v.maps[m.TeamB] += n
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
		v.fit(from)
		v.st.fitted, v.st.month = true, mi
	}
	return v.st.predict(v.view(x, v.pick)), true
}

// view is the stacker's input x with only the map column of step i (x
// holds one map column per step).
func (v *v2) view(x []float64, i int) []float64 {
	n := len(v.mapKs)
	j := -1
	for c, name := range v.cols {
		if name == FeatMap {
			j = c
		}
	}
	if n == 1 || j < 0 {
		return x
	}
	out := make([]float64, 0, len(x)-n+1)
	out = append(out, x[:j]...)
	out = append(out, x[j+i])
	return append(out, x[j+n:]...)
}

// fit refits the stacker on the rows from `from` on, once per map-level
// step, and keeps the step whose fit has the highest log-likelihood on
// those rows (the steps give models of the same size; a single step is a
// plain refit). Only results known at the refit are used.
func (v *v2) fit(from int) {
	ys := v.st.ys[from:]
	bestLL := math.Inf(-1)
	var best []float64
	pick := v.pick
	for i := range v.mapKs {
		xs := make([][]float64, len(ys))
		for r, x := range v.st.xs[from:] {
			xs[r] = v.view(x, i)
		}
		var w0 []float64
		if i == v.pick {
			w0 = v.st.w // warm start from the step in use
		}
		w := FitLogisticN(xs, ys, v.cfg.Ridge, w0, 30)
		if len(v.mapKs) == 1 {
			v.st.w = w
			return
		}
		if ll := logLik(w, xs, ys); ll > bestLL {
			bestLL, best, pick = ll, w, i
		}
	}
	v.st.w, v.pick = best, pick
}

// logLik is the log-likelihood of outcomes ys under p = logistic(w·[1, x]).
func logLik(w []float64, xs [][]float64, ys []float64) float64 {
	s := stacker{w: w}
	ll := 0.0
	for i, x := range xs {
		p := math.Min(math.Max(s.predict(x), 1e-12), 1-1e-12)
		if ys[i] > 0.5 {
			ll += math.Log(p)
		} else {
			ll += math.Log(1 - p)
		}
	}
	return ll
}

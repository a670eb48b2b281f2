package model

import (
	"math"
	"time"
)

// Features of the 2.0 stacker (StackConfig.Features); every forecast's
// vector is built from results known strictly before the match.
const (
	// FeatGlicko: logit of the Glicko-2 expected score (1.1.0's raw p).
	FeatGlicko = "glicko"
	// FeatMap: logit of the map-level rating's probability; with FeatFormat
	// it is the series probability of the match's format.
	FeatMap = "map"
	// FeatFormat makes FeatMap format-aware (bo1/bo3/bo5 from the per-map
	// probability); it adds no column of its own.
	FeatFormat = "format"
	// FeatBo1: FeatMap's value on a best-of-one, 0 otherwise (a bo1 is
	// noisier than its map probability says).
	FeatBo1 = "bo1"
	// FeatRank: ln(rank_B / rank_A) of the upstream's published ranks, 0
	// when a team has none; FeatRankKnown is 1 when both have one.
	FeatRank      = "rank"
	FeatRankKnown = "rank_known"
	// FeatExp: ln(1 + matches_A) − ln(1 + matches_B), results known so far.
	FeatExp = "exp"
	// FeatPerf: the difference of the teams' kill-share ratings.
	FeatPerf = "perf"
)

// columnOrder is the order of the stacker's columns after the intercept.
var columnOrder = []string{FeatGlicko, FeatMap, FeatBo1, FeatRank, FeatRankKnown, FeatExp, FeatPerf}

// StackConfig configures eo_model 2.0: the component ratings and the
// walk-forward logistic stacker that combines them (MODEL.md, "eo_model 2.0").
type StackConfig struct {
	// Features are the stacker's inputs (the Feat constants); empty
	// disables the stacker: the forecast is 1.1.0's calibrated Glicko-2.
	Features []string
	// MapK is the map-level rating's step (logit units per map) when
	// MapKGrid is empty.
	MapK float64
	// MapKGrid, when set, keeps one map-level rating per step; at each
	// refit the stacker is fitted once per step (on the same rows) and the
	// step whose fit has the highest log-likelihood is used until the next
	// refit: the step is chosen walk-forward on each dataset's own past.
	MapKGrid []float64
	// MapDecay, when positive, lowers the map-level step as the two teams
	// play more maps: MapK / sqrt(1 + n/MapDecay), n the mean of their
	// maps so far (0: a constant step).
	MapDecay float64
	// MapScale turns the map-level rating difference d into the map win
	// probability logistic(MapScale·d) (the rating is fitted to round
	// shares, which are flatter than map wins).
	MapScale float64
	// RoundWeight is the weight of the round share in a map's score
	// (1 − RoundWeight on the win).
	RoundWeight float64
	// PerfK is the kill-share rating's step.
	PerfK float64
	// RosterShrink moves a team's map-level and kill-share ratings this
	// fraction of the way to a new team's per player changed out of five
	// when a completed match shows a changed lineup.
	RosterShrink float64
	// MinTrain is how many settled forecasts the stacker needs before it is
	// used (before: the calibrated Glicko-2 forecast).
	MinTrain int
	// Ridge is the L2 penalty on the stacker's coefficients (not the intercept).
	Ridge float64
	// WindowMonths fits the stacker on the results of the last WindowMonths
	// calendar months only (0: on all earlier results).
	WindowMonths int
	// RefitMonths refits the stacker at the first forecast of every
	// RefitMonths-th calendar month (UTC), on the results known then.
	RefitMonths int
}

// DefaultStackConfig is eo_model 2.0's configuration, chosen on the tuning
// periods of the CS:GO 2015-2020 and CS2 2024-25 data only (MODEL.md,
// "eo_model 2.0").
func DefaultStackConfig() StackConfig {
	return StackConfig{
		Features:     []string{FeatGlicko, FeatMap, FeatFormat, FeatRank, FeatExp, FeatPerf},
		MapK:         0.4,
		MapKGrid:     []float64{0.1, 0.2, 0.4},
		MapScale:     1,
		RoundWeight:  1,
		PerfK:        0.75,
		MinTrain:     150,
		Ridge:        1,
		RefitMonths:  1,
		WindowMonths: 6,
	}
}

func (c StackConfig) has(f string) bool {
	for _, x := range c.Features {
		if x == f {
			return true
		}
	}
	return false
}

// columns are the stacker's columns in use, in columnOrder.
func (c StackConfig) columns() []string {
	var out []string
	for _, f := range columnOrder {
		if c.has(f) {
			out = append(out, f)
		}
	}
	return out
}

// stacker is the walk-forward logistic regression p = logistic(w·[1, x]).
type stacker struct {
	cols   []string
	xs     [][]float64
	ys     []float64
	mo     []int // each row's month index (of its result)
	w      []float64
	fitted bool
	month  int // the month index of the last fit
}

func monthIndex(t time.Time) int { t = t.UTC(); return t.Year()*12 + int(t.Month()) - 1 }

func (s *stacker) predict(x []float64) float64 {
	z := s.w[0]
	for j, v := range x {
		z += s.w[j+1] * v
	}
	return logistic(z)
}

// FitLogisticN fits p = logistic(w0 + Σ wj xj) by Newton's method: maximum
// likelihood with an L2 penalty ridge/2 Σ wj² (j ≥ 1), starting from w0
// (nil: zeros). It is the 2.0 stacker's fit.
func FitLogisticN(xs [][]float64, ys []float64, ridge float64, w0 []float64, maxIter int) []float64 {
	if len(xs) == 0 {
		return w0
	}
	d := len(xs[0]) + 1
	w := make([]float64, d)
	copy(w, w0)
	row := make([]float64, d)
	for it := 0; it < maxIter; it++ {
		g := make([]float64, d)
		h := make([][]float64, d)
		for j := range h {
			h[j] = make([]float64, d)
			if j > 0 {
				h[j][j] = ridge
				g[j] = ridge * w[j]
			}
		}
		h[0][0] += 1e-9
		for i, x := range xs {
			row[0] = 1
			copy(row[1:], x)
			z := 0.0
			for j, v := range row {
				z += w[j] * v
			}
			p := logistic(z)
			r, q := p-ys[i], p*(1-p)
			for j, v := range row {
				g[j] += r * v
				for k := 0; k <= j; k++ {
					h[j][k] += q * v * row[k]
				}
			}
		}
		for j := 0; j < d; j++ {
			for k := j + 1; k < d; k++ {
				h[j][k] = h[k][j]
			}
		}
		step, ok := solve(h, g)
		if !ok {
			break
		}
		big := 0.0
		for j := range w {
			w[j] -= step[j]
			big = math.Max(big, math.Abs(step[j]))
		}
		if big < 1e-9 {
			break
		}
	}
	return w
}

// solve solves a x = b (a symmetric positive definite) by Gaussian
// elimination with partial pivoting; ok is false when a is singular.
func solve(a [][]float64, b []float64) ([]float64, bool) {
	n := len(b)
	m := make([][]float64, n)
	for i := range m {
		m[i] = append(append([]float64(nil), a[i]...), b[i])
	}
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		if math.Abs(m[p][c]) < 1e-300 {
			return nil, false
		}
		m[c], m[p] = m[p], m[c]
		for r := c + 1; r < n; r++ {
			f := m[r][c] / m[c][c]
			for k := c; k <= n; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := m[r][n]
		for k := r + 1; k < n; k++ {
			s -= m[r][k] * x[k]
		}
		x[r] = s / m[r][r]
	}
	return x, true
}

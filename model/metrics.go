package model

import (
	"math"
	"time"
)

// MarketMatchWinner is the only market eo_model forecasts.
const MarketMatchWinner = "match_winner"

// DefaultMinSettled is the gate's default minimum number of settled matches.
const DefaultMinSettled = 500

// NoSkillBrier is the Brier score of always forecasting 0.5 in a two-way market.
const NoSkillBrier = 0.25

// Metrics evaluates the settled forecasts of one market.
type Metrics struct {
	Market          string
	Brier           float64
	BrierCILow      float64
	BrierCIHigh     float64
	LogLoss         float64
	Accuracy        float64
	BrierSkillScore float64
	SettledMatches  int
	ModelVersion    string
	GatePassed      bool
	MinSettled      int
	EvaluatedAt     time.Time
}

// Evaluate computes the metrics over the settled forecasts and applies the
// gate: the upper bound of the 95% confidence interval of the Brier score
// must be below 0.25 and at least minSettled matches must be settled.
//
// The interval is the normal approximation: mean +- 1.96 s / sqrt(n), with s
// the sample standard deviation of the per-match squared errors
// (deterministic, no resampling). With no settled match the scores are zero
// and the gate is closed.
func Evaluate(fs []Forecast, minSettled int, asOf time.Time) Metrics {
	m := Metrics{Market: MarketMatchWinner, ModelVersion: Version, MinSettled: minSettled, EvaluatedAt: asOf}
	var sum, sumSq, ll, acc float64
	n := 0
	for i := range fs {
		f := &fs[i]
		if !f.Settled {
			continue
		}
		n++
		b := f.Brier()
		sum += b
		sumSq += b * b
		p := math.Min(math.Max(f.PHome, 1e-15), 1-1e-15)
		if f.Outcome == 1 {
			ll -= math.Log(p)
		} else {
			ll -= math.Log(1 - p)
		}
		switch {
		case f.PHome == 0.5:
			acc += 0.5
		case (f.PHome > 0.5) == (f.Outcome == 1):
			acc++
		}
	}
	m.SettledMatches = n
	if n == 0 {
		return m
	}
	fn := float64(n)
	m.Brier = sum / fn
	half := 0.0
	if n > 1 {
		variance := (sumSq - fn*m.Brier*m.Brier) / (fn - 1)
		half = 1.96 * math.Sqrt(math.Max(variance, 0)/fn)
	} else {
		half = math.Inf(1)
	}
	m.BrierCILow = math.Max(0, m.Brier-half)
	m.BrierCIHigh = math.Min(1, m.Brier+half)
	m.LogLoss = ll / fn
	m.Accuracy = acc / fn
	m.BrierSkillScore = 1 - m.Brier/NoSkillBrier
	m.GatePassed = GatePasses(m.BrierCIHigh, n, minSettled)
	return m
}

// GatePasses is the eo_model gate.
func GatePasses(ciHigh float64, settled, minSettled int) bool {
	return settled >= minSettled && ciHigh < NoSkillBrier
}

// Line is one eo_model odds line before ids are minted: one outcome of the
// match-winner market of one match.
type Line struct {
	MatchID      string
	OutcomeKey   string // home (team A) or away (team B)
	TeamID       string
	Probability  float64
	Price        float64 // 1 / Probability
	IsWinner     *bool   // null until settled
	IsClosing    bool
	CapturedAt   time.Time
	ModelVersion string
}

// Lines returns the eo_model lines: none while the gate is closed; with it
// open, one closing line per outcome of every forecast match (settled or
// not). The forecast is the single pre-match line, so it is the closing one.
func Lines(fs []Forecast, m Metrics) []Line {
	if !m.GatePassed {
		return nil
	}
	out := make([]Line, 0, 2*len(fs))
	for _, f := range fs {
		for _, side := range []struct {
			key, team string
			p         float64
			won       int
		}{{"home", f.TeamA, f.PHome, 1}, {"away", f.TeamB, 1 - f.PHome, 0}} {
			p := math.Min(math.Max(side.p, 1e-6), 1-1e-6)
			l := Line{MatchID: f.MatchID, OutcomeKey: side.key, TeamID: side.team, Probability: p,
				Price: 1 / p, IsClosing: true, CapturedAt: f.CapturedAt, ModelVersion: Version}
			if f.Settled {
				w := f.Outcome == side.won
				l.IsWinner = &w
			}
			out = append(out, l)
		}
	}
	return out
}

// PairedBrierDiff is the mean paired difference of two forecasts' Brier
// scores on the same outcomes y (1 or 0), mean of (a−y)² − (b−y)², with its
// 95% interval by the normal approximation (mean ± 1.96 s/√n, s the sample
// standard deviation of the per-match differences); negative: a is better.
// With fewer than two matches the interval is unbounded.
func PairedBrierDiff(a, b []float64, y []int) (mean, lo, hi float64) {
	n := float64(len(y))
	var s, ss float64
	for i := range y {
		o := float64(y[i])
		d := (a[i]-o)*(a[i]-o) - (b[i]-o)*(b[i]-o)
		s += d
		ss += d * d
	}
	if len(y) == 0 {
		return 0, math.Inf(-1), math.Inf(1)
	}
	mean = s / n
	if n < 2 {
		return mean, math.Inf(-1), math.Inf(1)
	}
	v := (ss - n*mean*mean) / (n - 1)
	half := 1.96 * math.Sqrt(math.Max(v, 0)/n)
	return mean, mean - half, mean + half
}

package model

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// The model review: eo_model against the closing eo_market line and a
// tuned Elo, scored on the same settled matches (MODEL.md, "Model
// review"). The pipeline builds it (Review) after the odds lines are
// assembled, publishes it as the model_comparison, model_reliability and
// model_monthly tables, and draws it in the report (Report).

// Forecasters of the review, in the order of ComparedMatch.P and of every
// list of Comparison.
const (
	ForecasterModel  = "eo_model"
	ForecasterMarket = "eo_market"
	ForecasterElo    = "elo"
)

// Forecasters lists the review's forecasters in order.
var Forecasters = [3]string{ForecasterModel, ForecasterMarket, ForecasterElo}

// ComparedMatch is one settled match of the review with each forecaster's
// probability that team A (the home outcome) wins.
type ComparedMatch struct {
	MatchID     string
	ScheduledAt time.Time
	Outcome     int        // 1 team A won, 0 team B won
	P           [3]float64 // eo_model, eo_market (closing), elo
}

// ForecasterScore is one forecaster's figures on the compared matches.
// Metrics carries n, Brier with its 95% interval, log loss and accuracy
// (Evaluate; its gate fields are not used). On the market and Elo rows,
// ModelDiff is eo_model's Brier minus this forecaster's, paired over the
// same matches, with its 95% interval (PairedBrierDiff): negative means
// eo_model is better. HasDiff is false on the eo_model row.
type ForecasterScore struct {
	Forecaster                             string
	Metrics                                Metrics
	HasDiff                                bool
	ModelDiff, ModelDiffLow, ModelDiffHigh float64
	Params                                 string
}

// ReliabilityBin is one bin of width 0.1 of a forecaster's probabilities
// (the last bin includes 1): its count, mean forecast and observed team-A
// win rate with the rate's 95% Wilson interval.
type ReliabilityBin struct {
	Forecaster                string
	Bin                       int // 0..9
	Low, High                 float64
	N                         int
	MeanP, Observed           float64
	ObservedLow, ObservedHigh float64
}

// MonthBrier is a forecaster's Brier score over the compared matches of
// one calendar month (UTC, by scheduled time) with its 95% interval.
type MonthBrier struct {
	Forecaster string
	Month      time.Time // the first instant of the month
	N          int
	Brier      float64
	Low, High  float64
}

// Comparison is the model review of one market.
type Comparison struct {
	Market string
	// From starts the compared period: Elo is tuned on the completed
	// matches scheduled before it and every forecaster is scored on the
	// matches from it on.
	From        time.Time
	EvaluatedAt time.Time
	// EloK, EloH are the tuned Elo's values; EloTuned the matches they were
	// tuned on.
	EloK, EloH float64
	EloTuned   int
	// Matches is the number of compared matches.
	Matches     int
	Scores      []ForecasterScore // Forecasters order
	Reliability []ReliabilityBin  // by forecaster, then bin; empty bins left out
	Monthly     []MonthBrier      // by forecaster, then month
}

// Score returns the score of forecaster name.
func (c Comparison) Score(name string) (ForecasterScore, bool) {
	for _, s := range c.Scores {
		if s.Forecaster == name {
			return s, true
		}
	}
	return ForecasterScore{}, false
}

// Review builds the comparison from the model's run: the matches it saw
// (completed ones played to a winner), its forecasts (res.Forecasts, in
// the matches' order) and the closing eo_market probability of team A by
// match id (the matches without a closing line are not compared).
//
// Elo (EloForecasts) runs over the completed matches walk-forward, like
// eo_model (a forecast at scheduled_at, a result at ended_at); its K and H
// are tuned (TuneElo, default grids) on the matches scheduled before From
// = TuningSplit of their times, so the matches it is scored on played no
// part in choosing them. The compared matches are the settled ones from
// From on with an eo_model forecast and a closing eo_market line.
func Review(matches []Match, fs []Forecast, closing map[string]float64, asOf time.Time) Comparison {
	var games []EloGame
	var times []time.Time
	idx := make([]int, len(matches)) // match -> its game, or -1
	for i, m := range matches {
		idx[i] = -1
		if !m.Completed {
			continue
		}
		idx[i] = len(games)
		games = append(games, EloGame{TeamA: m.TeamA, TeamB: m.TeamB, At: m.ScheduledAt, KnownAt: m.EndedAt, WinnerA: m.WinnerA})
		times = append(times, m.ScheduledAt)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	from := TuningSplit(times)
	var tune []EloGame
	for _, g := range games {
		if g.At.Before(from) {
			tune = append(tune, g)
		}
	}
	k, h := TuneElo(tune, DefaultEloKGrid, DefaultEloHGrid)
	elo := EloForecasts(games, k, h)

	var cms []ComparedMatch
	for i, f := range fs {
		pm, ok := closing[f.MatchID]
		if !ok || !f.Settled || idx[i] < 0 || f.ScheduledAt.Before(from) {
			continue
		}
		cms = append(cms, ComparedMatch{MatchID: f.MatchID, ScheduledAt: f.ScheduledAt, Outcome: f.Outcome,
			P: [3]float64{f.PHome, pm, elo[idx[i]]}})
	}
	c := Compare(cms, asOf)
	c.From, c.EloK, c.EloH, c.EloTuned = from, k, h, len(tune)
	for i := range c.Scores {
		switch c.Scores[i].Forecaster {
		case ForecasterModel:
			c.Scores[i].Params = "walk-forward forecast (" + Version + ")"
		case ForecasterMarket:
			c.Scores[i].Params = "closing de-vigged line: p = (1/price_home) / (1/price_home + 1/price_away)"
		case ForecasterElo:
			c.Scores[i].Params = fmt.Sprintf("K=%g, H=%g (tuned on %d matches before %s)", k, h, len(tune), from.Format("2006-01-02"))
		}
	}
	return c
}

// Compare scores the three forecasters on the same matches: n, Brier with
// its 95% interval, log loss and accuracy each; the paired Brier
// difference of eo_model against each other; reliability in ten bins with
// Wilson intervals; the Brier score per calendar month. Every figure is
// deterministic (normal approximations, no resampling).
func Compare(ms []ComparedMatch, asOf time.Time) Comparison {
	c := Comparison{Market: MarketMatchWinner, EvaluatedAt: asOf, Matches: len(ms)}
	y := make([]int, len(ms))
	for i, m := range ms {
		y[i] = m.Outcome
	}
	ps := make([][]float64, len(Forecasters))
	for k := range Forecasters {
		ps[k] = make([]float64, len(ms))
		for i, m := range ms {
			ps[k][i] = m.P[k]
		}
	}
	for k, name := range Forecasters {
		s := ForecasterScore{Forecaster: name, Metrics: Evaluate(settledForecasts(ms, k), 0, asOf)}
		if k > 0 {
			s.HasDiff = true
			s.ModelDiff, s.ModelDiffLow, s.ModelDiffHigh = PairedBrierDiff(ps[0], ps[k], y)
		}
		c.Scores = append(c.Scores, s)
		for _, b := range Reliability(ps[k], y) {
			if b.N > 0 {
				b.Forecaster = name
				c.Reliability = append(c.Reliability, b)
			}
		}
		c.Monthly = append(c.Monthly, monthly(name, ms, k, asOf)...)
	}
	return c
}

// settledForecasts are forecaster k's probabilities of ms as settled
// forecasts, for Evaluate.
func settledForecasts(ms []ComparedMatch, k int) []Forecast {
	fs := make([]Forecast, len(ms))
	for i, m := range ms {
		fs[i] = Forecast{MatchID: m.MatchID, ScheduledAt: m.ScheduledAt, PHome: m.P[k], Settled: true, Outcome: m.Outcome}
	}
	return fs
}

// monthly is forecaster k's Brier score per calendar month of ms.
func monthly(name string, ms []ComparedMatch, k int, asOf time.Time) []MonthBrier {
	byMonth := map[time.Time][]Forecast{}
	for _, f := range settledForecasts(ms, k) {
		t := f.ScheduledAt.UTC()
		m := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		byMonth[m] = append(byMonth[m], f)
	}
	out := make([]MonthBrier, 0, len(byMonth))
	for m, fs := range byMonth {
		e := Evaluate(fs, 0, asOf)
		out = append(out, MonthBrier{Forecaster: name, Month: m, N: e.SettledMatches, Brier: e.Brier, Low: e.BrierCILow, High: e.BrierCIHigh})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Month.Before(out[j].Month) })
	return out
}

// ReliabilityBins is the number of bins of Reliability.
const ReliabilityBins = 10

// Reliability bins forecasts p of outcomes y (1 or 0) in ten bins of width
// 0.1 (bin k holds k/10 ≤ p < (k+1)/10, the last one p = 1 too): each bin's
// count, mean forecast and observed rate with its 95% Wilson interval.
// Every bin is returned, empty ones with N = 0 and zero figures.
func Reliability(p []float64, y []int) []ReliabilityBin {
	out := make([]ReliabilityBin, ReliabilityBins)
	var wins [ReliabilityBins]int
	for i, v := range p {
		k := min(max(int(v*ReliabilityBins), 0), ReliabilityBins-1)
		out[k].N++
		out[k].MeanP += v
		wins[k] += y[i]
	}
	for k := range out {
		b := &out[k]
		b.Bin = k
		b.Low, b.High = float64(k)/ReliabilityBins, float64(k+1)/ReliabilityBins
		if b.N == 0 {
			continue
		}
		b.MeanP /= float64(b.N)
		b.Observed = float64(wins[k]) / float64(b.N)
		b.ObservedLow, b.ObservedHigh = Wilson(wins[k], b.N)
	}
	return out
}

// Wilson is the 95% Wilson score interval of a proportion of k successes
// in n trials; [0, 1] when n is 0.
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.96
	fn := float64(n)
	p := float64(k) / fn
	den := 1 + z*z/fn
	centre := (p + z*z/(2*fn)) / den
	half := z * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn)) / den
	return math.Max(0, centre-half), math.Min(1, centre+half)
}

package validate

import (
	"math"
	"testing"
	"time"

	"github.com/eodata/eo/importer"
)

// The excerpt: every CS:GO match of 2019-09-01 to 2019-12-31 in results.csv
// (see testdata/README.md).
func games(t *testing.T) []importer.Game {
	t.Helper()
	ds, err := importer.ReadCSGO2015("testdata/csgo2015_2019h2.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Games) < 1500 {
		t.Fatalf("only %d games", len(ds.Games))
	}
	return ds.Games
}

var from = time.Date(2019, 11, 1, 0, 0, 0, 0, time.UTC)

func TestCoinIsQuarter(t *testing.T) {
	r, err := Run(games(t), Options{From: from, EveryMonths: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Scores {
		if s.Name == Coin && s.Metrics.Brier != 0.25 {
			t.Fatalf("coin Brier %v, want exactly 0.25", s.Metrics.Brier)
		}
	}
	if r.NTune == 0 || r.NEval < 500 || len(r.Scores) != 5 {
		t.Fatalf("tune %d eval %d scores %d", r.NTune, r.NEval, len(r.Scores))
	}
	for _, s := range r.Scores {
		if s.Metrics.SettledMatches != r.NEval {
			t.Errorf("%s: N %d, want %d", s.Name, s.Metrics.SettledMatches, r.NEval)
		}
		if s.Name != Coin && s.Metrics.Brier >= 0.25 {
			t.Errorf("%s: Brier %.4f not better than a coin", s.Name, s.Metrics.Brier)
		}
	}
	if len(r.Agreement) == 0 {
		t.Error("no rank agreement rows")
	}
	if md := r.Markdown("csgo2015", ""); len(md) < 500 {
		t.Errorf("short report:\n%s", md)
	}
}

// flip returns a copy of gs with game i's result reversed.
func flip(gs []importer.Game, i int) []importer.Game {
	out := append([]importer.Game(nil), gs...)
	out[i].WinnerA = !out[i].WinnerA
	return out
}

// TestNoLookahead: reversing a later result changes no forecast of a match
// on an earlier day, for every forecaster; and, the result being in the
// evaluation period, neither the Elo tuning nor the rank fit.
func TestNoLookahead(t *testing.T) {
	gs := games(t)
	base, err := Run(gs, Options{From: from})
	if err != nil {
		t.Fatal(err)
	}
	k := len(base.Games) * 3 / 4 // in the evaluation period
	target := base.Games[k]
	idx := -1
	for i, g := range gs {
		if g.MatchID == target.MatchID {
			idx = i
		}
	}
	alt, err := Run(flip(gs, idx), Options{From: from})
	if err != nil {
		t.Fatal(err)
	}
	if alt.EloK != base.EloK || alt.EloH != base.EloH || alt.RankA != base.RankA || alt.RankB != base.RankB {
		t.Fatalf("tuning changed by an evaluation-period result: K %v→%v H %v→%v", base.EloK, alt.EloK, base.EloH, alt.EloH)
	}
	changedLater := false
	for name, p := range base.Forecasts {
		q := alt.Forecasts[name]
		for i, g := range base.Games {
			if g.ScheduledAt.Before(target.ScheduledAt) || g.ScheduledAt.Equal(target.ScheduledAt) {
				if p[i] != q[i] {
					t.Fatalf("%s: forecast of %s (%s) changed by the later result of %s (%s)", name, g.MatchID,
						g.ScheduledAt.Format("2006-01-02"), target.MatchID, target.ScheduledAt.Format("2006-01-02"))
				}
			} else if p[i] != q[i] {
				changedLater = true
			}
		}
	}
	if !changedLater {
		t.Error("the flipped result changed no later forecast: is it used at all?")
	}
}

// TestEloTuningUsesTuningPeriodOnly: the tuned K/H are those that minimise
// the Brier on the matches before From, and reversing many evaluation-period
// results leaves them unchanged, while reversing tuning-period results can
// change them.
func TestEloTuningUsesTuningPeriodOnly(t *testing.T) {
	gs := games(t)
	base, err := Run(gs, Options{From: from})
	if err != nil {
		t.Fatal(err)
	}
	tune := base.Games[:base.NTune]
	best := math.Inf(1)
	var bk, bh float64
	for _, k := range DefaultKGrid {
		for _, h := range DefaultHGrid {
			if b := brier(tune, EloForecasts(tune, k, h)); b < best-1e-12 {
				best, bk, bh = b, k, h
			}
		}
	}
	if bk != base.EloK || bh != base.EloH {
		t.Fatalf("tuned K=%v H=%v, the tuning-period optimum is K=%v H=%v", base.EloK, base.EloH, bk, bh)
	}
	alt := append([]importer.Game(nil), gs...)
	for i := range alt {
		if !alt[i].ScheduledAt.Before(from) && i%2 == 0 {
			alt[i].WinnerA = !alt[i].WinnerA
		}
	}
	r2, err := Run(alt, Options{From: from})
	if err != nil {
		t.Fatal(err)
	}
	if r2.EloK != base.EloK || r2.EloH != base.EloH {
		t.Fatalf("evaluation-period results moved the tuning: K %v→%v H %v→%v", base.EloK, r2.EloK, base.EloH, r2.EloH)
	}
}

func TestSpearman(t *testing.T) {
	if s := Spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}); math.Abs(s-1) > 1e-12 {
		t.Errorf("perfect: %v", s)
	}
	if s := Spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}); math.Abs(s+1) > 1e-12 {
		t.Errorf("reversed: %v", s)
	}
}

// brier is the Brier score of forecasts p of gs.
func brier(gs []importer.Game, p []float64) float64 {
	s := 0.0
	for i, g := range gs {
		d := p[i] - outcome(g)
		s += d * d
	}
	return s / float64(len(gs))
}

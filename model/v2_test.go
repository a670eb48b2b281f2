package model

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestSeriesProbability(t *testing.T) {
	for _, c := range []struct {
		p      float64
		format string
		want   float64
	}{
		{0.6, "bo1", 0.6}, {0.6, "", 0.6}, {0.6, "bo3", 0.648}, {0.6, "bo5", 0.68256}, {0.5, "bo5", 0.5},
	} {
		if got := SeriesProbability(c.p, c.format); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("SeriesProbability(%v, %q) = %v, want %v", c.p, c.format, got, c.want)
		}
	}
}

// v2World is a small deterministic world with maps, kills and ranks: each
// day every team plays once, results known at the end of the day.
func v2World(rename func(string) string) ([]Match, []RankObs) {
	day0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var ms []Match
	var ranks []RankObs
	const teams = 12
	for d := 0; d < 120; d++ {
		at := day0.AddDate(0, 0, d)
		for k := 0; k < teams; k++ { // every team plays more than once a day
			a, b := (k+d)%teams, (teams-1-k+2*d)%teams
			if a == b {
				continue
			}
			ta, tb := rename(fmt.Sprintf("t%02d", a)), rename(fmt.Sprintf("t%02d", b))
			winA := (a*7+b*3+d)%5 < 3 || a < b/2
			ra, rb := 13, 7+(a+d)%5
			if !winA {
				ra, rb = rb, ra
			}
			m := Match{ID: rename(fmt.Sprintf("m%03d-%d", d, k)), TeamA: ta, TeamB: tb, ScheduledAt: at, // one time per day: results ordered by id

				Completed: true, EndedAt: at.Add(24*time.Hour - time.Second), WinnerA: winA, Format: "bo1",
				Maps: []MapScore{{Name: "de_mirage", RoundsA: ra, RoundsB: rb, WinnerA: winA}},
				Perf: &Perf{KillsA: float64(60 + ra*3), KillsB: float64(60 + rb*3)}}
			if winA {
				m.MapsA = 1
			} else {
				m.MapsB = 1
			}
			ms = append(ms, m)
			if d%7 == 0 {
				ranks = append(ranks, RankObs{Team: ta, At: at, Rank: 1 + a}, RankObs{Team: tb, At: at, Rank: 1 + b})
			}
		}
	}
	return ms, ranks
}

// TestStackIgnoresIDs: the forecasts do not depend on the ids (the
// pipeline has service ids where eo validate has upstream ids), and the
// stacker is used once it has enough history.
func TestStackIgnoresIDs(t *testing.T) {
	cfg := DefaultForecastConfig()
	ms, ranks := v2World(func(s string) string { return s })
	cfg.Ranks = ranks
	a := Run(ms, cfg)
	ms2, ranks2 := v2World(reverse) // another order of the ids
	cfg.Ranks = ranks2
	b := Run(ms2, cfg)
	stacked := 0
	for i := range a.Forecasts {
		fa, fb := a.Forecasts[i], b.Forecasts[i]
		if math.Abs(fa.PHome-fb.PHome) > 1e-9 {
			t.Fatalf("match %d: %v with the first ids, %v with the second", i, fa.PHome, fb.PHome)
		}
		if fa.PHome != fa.PGlicko {
			stacked++
		}
	}
	if stacked < len(a.Forecasts)/2 {
		t.Fatalf("only %d of %d forecasts are stacked", stacked, len(a.Forecasts))
	}
}

// TestStackUsesOnlyEarlierDays: flipping a result changes no forecast of
// its own day or earlier (results are known at the end of the day).
func TestStackUsesOnlyEarlierDays(t *testing.T) {
	ms, ranks := v2World(func(s string) string { return s })
	cfg := DefaultForecastConfig()
	cfg.Ranks = ranks
	base := Run(ms, cfg)
	i := len(ms) / 2
	ms[i].WinnerA = !ms[i].WinnerA
	ms[i].Maps[0].RoundsA, ms[i].Maps[0].RoundsB = ms[i].Maps[0].RoundsB, ms[i].Maps[0].RoundsA
	ms[i].Maps[0].WinnerA = !ms[i].Maps[0].WinnerA
	flipped := Run(ms, cfg)
	end := ms[i].EndedAt
	moved := 0
	for j, f := range flipped.Forecasts {
		if !ms[j].ScheduledAt.After(end) && f.PHome != base.Forecasts[j].PHome {
			t.Fatalf("forecast of %s (at %s) moved when a result known at %s was flipped", ms[j].ID, ms[j].ScheduledAt, end)
		}
		if ms[j].ScheduledAt.After(end) && f.PHome != base.Forecasts[j].PHome {
			moved++
		}
		if f.CapturedAt.After(ms[j].ScheduledAt.Add(-time.Second)) {
			t.Fatalf("%s captured at %s, after its start", ms[j].ID, f.CapturedAt)
		}
	}
	if moved == 0 {
		t.Fatal("no later forecast moved: the flip did not reach the model")
	}
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// TestMapKGrid: a grid of one step is exactly that fixed step; with
// several, each refit keeps the step whose map column explains the results
// best, and the stacker reads only that column.
func TestMapKGrid(t *testing.T) {
	ms, ranks := v2World(func(s string) string { return s })
	run := func(k float64, grid []float64) RunResult {
		cfg := DefaultForecastConfig()
		cfg.Ranks = ranks
		cfg.Stack.MapK, cfg.Stack.MapKGrid = k, grid
		return Run(ms, cfg)
	}
	fixed, one := run(0.2, nil), run(9, []float64{0.2})
	for i := range fixed.Forecasts {
		if fixed.Forecasts[i].PHome != one.Forecasts[i].PHome {
			t.Fatalf("match %d: MapK 0.2 gives %v, MapKGrid {0.2} %v", i, fixed.Forecasts[i].PHome, one.Forecasts[i].PHome)
		}
	}

	v := newV2(StackConfig{Features: []string{FeatGlicko, FeatMap, FeatExp}, MapKGrid: []float64{0.1, 0.2, 0.4}, Ridge: 1})
	x := []float64{1, 2, 3, 4, 5} // glicko, map(0.1), map(0.2), map(0.4), exp
	if got := v.view(x, 2); fmt.Sprint(got) != "[1 4 5]" {
		t.Errorf("view(x, 2) = %v, want [1 4 5]", got)
	}
	// results that follow the 0.2 column; the others are unrelated
	for i := 0; i < 400; i++ {
		sig := float64(i%9-4) / 2
		noise1, noise3 := float64((i*7)%9-4)/2, float64((i*5)%11-5)/2
		y := 0.0
		if (i*37)%100 < int(100*logistic(2*sig)) {
			y = 1
		}
		v.st.xs = append(v.st.xs, []float64{0, noise1, sig, noise3, 0})
		v.st.ys = append(v.st.ys, y)
	}
	v.fit(0)
	if v.pick != 1 {
		t.Fatalf("picked step %g, want 0.2 (the column the results follow)", v.mapKs[v.pick])
	}
}

package model

import (
	"fmt"
	"testing"
	"time"
)

// TestRatingHistoryByHand: three teams, results on days 0 and 2, the
// history's as-of time in day 2. Day 0's rows are the Glicko-2 update of
// that day at its end; day 2's are the provisional ratings at the as-of
// time; ranks are the team board's then (B's deviation has grown over the
// idle day 1 by then).
func TestRatingHistoryByHand(t *testing.T) {
	cfg := DefaultForecastConfig()
	day := func(d int, h int) time.Time { return time.Date(2024, 3, 4+d, h, 0, 0, 0, time.UTC) }
	ms := []Match{
		{ID: "m1", TeamA: "A", TeamB: "B", ScheduledAt: day(0, 10), Completed: true, EndedAt: day(0, 12), WinnerA: true},
		{ID: "m2", TeamA: "C", TeamB: "A", ScheduledAt: day(2, 13), Completed: true, EndedAt: day(2, 14), WinnerA: false},
		{ID: "m3", TeamA: "B", TeamB: "C", ScheduledAt: day(5, 9)}, // scheduled after the as-of time
	}
	asOf := day(2, 15)
	cfg.AsOf = asOf
	cfg.Checkpoints = []time.Time{asOf}
	res := Run(ms, cfg)

	init := cfg.Ratings.Initial
	tau := cfg.Ratings.Tau
	a0 := Update(init, []Result{{Opp: init, Score: 1}}, tau)
	b0 := Update(init, []Result{{Opp: init, Score: 0}}, tau)
	bIdle := Update(b0, nil, tau) // day 1 closes without a game of B
	a1 := Update(a0, nil, tau)
	a2 := Update(a1, []Result{{Opp: init, Score: 1}}, tau) // day 2, provisional: A beat C
	c2 := Update(init, []Result{{Opp: a1, Score: 0}}, tau)
	// The board at the as-of time: A, C and B (all played in the window).
	want := []PeriodRating{
		{TeamID: "A", PeriodStart: day(0, 0), AsOf: day(1, 0), Rating: a0, Rank: 1},
		{TeamID: "B", PeriodStart: day(0, 0), AsOf: day(1, 0), Rating: b0, Rank: 2},
		{TeamID: "A", PeriodStart: day(2, 0), AsOf: asOf, Rating: a2, Rank: rankOf("A", a2, bIdle, c2)},
		{TeamID: "C", PeriodStart: day(2, 0), AsOf: asOf, Rating: c2, Rank: rankOf("C", a2, bIdle, c2)},
	}
	if fmt.Sprint(res.History) != fmt.Sprint(want) {
		t.Fatalf("history\n got %v\nwant %v", res.History, want)
	}
	// The open period's rows are the rankings' ratings at the as-of time.
	board := TeamBoard(res.Ratings[0], []Played{{"A", day(0, 10)}, {"B", day(0, 10)}, {"C", day(2, 13)}, {"A", day(2, 13)}}, asOf)
	for _, b := range board {
		for _, h := range res.History[2:] {
			if h.TeamID == b.TeamID && (h.Rating != b.Rating || h.Rank != b.Rank) {
				t.Errorf("team %s: history %v rank %d, board %v rank %d", h.TeamID, h.Rating, h.Rank, b.Rating, b.Rank)
			}
		}
	}
	// m3 starts after the as-of time and after day 3's period boundary: it
	// is published at the as-of time, not at an instant still to come.
	if got := res.Forecasts[2].CapturedAt; !got.Equal(asOf) {
		t.Errorf("m3 captured at %s, want the as-of time %s", got, asOf)
	}
	// Without AsOf, no history and the same probabilities.
	cfg.AsOf = time.Time{}
	plain := Run(ms, cfg)
	if plain.History != nil {
		t.Fatal("a history without an as-of time")
	}
	for i := range plain.Forecasts {
		if plain.Forecasts[i].PHome != res.Forecasts[i].PHome {
			t.Fatal("the as-of time changed a probability")
		}
	}
}

// rankOf is team's rank among A, B and C by R − 2 RD.
func rankOf(team string, a, b, c Rating) int {
	rs := map[string]Rating{"A": a, "B": b, "C": c}
	n := 1
	for id, r := range rs {
		if id != team && (r.Conservative() > rs[team].Conservative() || r.Conservative() == rs[team].Conservative() && id < team) {
			n++
		}
	}
	return n
}

// TestRatingHistoryMatchesCheckpoints: on a longer world every closed
// period's row is the team's rating when the period closed (a checkpoint
// at its end) and its rank on TeamBoard's board of the matches scheduled
// before that end; every team has a row for each day it played.
func TestRatingHistoryMatchesCheckpoints(t *testing.T) {
	ms, ranks := v2World(func(s string) string { return s })
	cfg := DefaultForecastConfig()
	cfg.Ranks = ranks
	asOf := ms[len(ms)-1].EndedAt
	cfg.AsOf = asOf
	var ends []time.Time
	for d := ms[0].ScheduledAt.AddDate(0, 0, 1); !d.After(asOf); d = d.AddDate(0, 0, 1) {
		ends = append(ends, d)
	}
	cfg.Checkpoints = ends
	res := Run(ms, cfg)
	var played []Played
	days := map[string]map[time.Time]bool{}
	for _, m := range ms {
		played = append(played, Played{m.TeamA, m.ScheduledAt}, Played{m.TeamB, m.ScheduledAt})
		for _, id := range []string{m.TeamA, m.TeamB} {
			if days[id] == nil {
				days[id] = map[time.Time]bool{}
			}
			days[id][m.ScheduledAt] = true // one match time a day, at 00:00
		}
	}
	rows := 0
	for i, end := range ends {
		rank := map[string]int{}
		for _, b := range TeamBoard(res.Ratings[i], played, end.Add(-time.Nanosecond)) {
			rank[b.TeamID] = b.Rank
		}
		for _, h := range res.History {
			if !h.AsOf.Equal(end) {
				continue
			}
			rows++
			if h.Rating != res.Ratings[i][h.TeamID] || h.Rank != rank[h.TeamID] || !h.PeriodStart.Equal(end.AddDate(0, 0, -1)) {
				t.Fatalf("%s of %s: %v rank %d, the checkpoint says %v rank %d", h.TeamID, h.PeriodStart, h.Rating, h.Rank,
					res.Ratings[i][h.TeamID], rank[h.TeamID])
			}
			if !days[h.TeamID][h.PeriodStart] {
				t.Fatalf("%s has a row for %s, a day it did not play", h.TeamID, h.PeriodStart)
			}
		}
	}
	want := 0
	for _, ds := range days {
		want += len(ds)
	}
	// the results of the last day are known at its last second: that
	// period is the open one at the as-of time
	open := 0
	for _, h := range res.History {
		if h.AsOf.Equal(asOf) {
			open++
		}
	}
	if rows+open != want || open == 0 {
		t.Fatalf("%d closed and %d open rows, want %d in all", rows, open, want)
	}
}

// TestForecastUsesNoRankSeenAfterItsCapture: a forecast is captured before
// its match starts, so a rank first seen at the start (as eo import dates a
// dataset's rank at match time: the match day's midnight) is not among its
// inputs: changing the ranks seen on one day moves no forecast captured
// before that day, and does move later ones.
func TestForecastUsesNoRankSeenAfterItsCapture(t *testing.T) {
	ms, ranks := v2World(func(s string) string { return s })
	cfg := DefaultForecastConfig()
	cfg.Ranks = ranks
	base := Run(ms, cfg)
	seen := ms[0].ScheduledAt.AddDate(0, 0, 63) // a day with rank observations
	moved := make([]RankObs, len(ranks))
	for i, r := range ranks {
		moved[i] = r
		if r.At.Equal(seen) {
			moved[i].Rank = 20 - r.Rank
		}
	}
	cfg.Ranks = moved
	got := Run(ms, cfg)
	later := 0
	for i, f := range got.Forecasts {
		b := base.Forecasts[i]
		if b.CapturedAt.Before(seen) && f.PHome != b.PHome {
			t.Fatalf("%s (captured %s, starts %s) moved when ranks seen at %s changed", f.MatchID, b.CapturedAt, ms[i].ScheduledAt, seen)
		}
		if f.PHome != b.PHome {
			later++
		}
		if !f.CapturedAt.Before(ms[i].ScheduledAt) {
			t.Fatalf("%s captured at %s, not before its start %s", f.MatchID, f.CapturedAt, ms[i].ScheduledAt)
		}
	}
	if later == 0 {
		t.Fatal("no forecast moved: the ranks did not reach the model")
	}
}

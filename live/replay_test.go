package live

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// chanFeed records what is published and reports each event.
type chanFeed struct {
	mu     sync.Mutex
	events []Event
	on     func(Event)
}

func (f *chanFeed) Publish(_ context.Context, ev Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
	if f.on != nil {
		f.on(ev)
	}
	return nil
}

func (f *chanFeed) Subscribe(context.Context) (<-chan Event, error) { return nil, ErrClosed }

// TestReplayKeepsAMatchLive runs the continuous replay with one slot (the
// strictest case for "always a live match") over a source of
// matches (one live with a played map, then scheduled ones) and checks the
// event stream: from the first live event until the source runs dry some
// match is always live; every match ends completed with maps that add up
// to its score, with halves; a live match keeps its played map unchanged.
func TestReplayKeepsAMatchLive(t *testing.T) {
	played := MapScore{MapNumber: 1, MapName: "de_vertigo", ScoreA: 13, ScoreB: 4, Done: true, FirstHalfSideA: "t",
		FirstHalfA: ip(9), FirstHalfB: ip(3), SecondHalfA: ip(4), SecondHalfB: ip(1)}
	src := []ReplayMatch{{UpstreamID: "m-live", BestOf: 3, Status: "live", ScoreA: 1, Maps: []MapScore{played}}}
	for i := 0; i < 5; i++ {
		src = append(src, ReplayMatch{UpstreamID: fmt.Sprint("m-", i), BestOf: []int{1, 3, 5}[i%3], Status: "scheduled"})
	}
	var mu sync.Mutex
	next := func(skip func(string) bool) (ReplayMatch, bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range src {
			if !skip(m.UpstreamID) {
				return m, true
			}
		}
		return ReplayMatch{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	completed := map[string]bool{}
	feed := &chanFeed{}
	feed.on = func(ev Event) {
		if ev.Kind == KindScore && ev.Status == "completed" {
			completed[ev.MatchID] = true
			if len(completed) == len(src) {
				cancel()
			}
		}
	}
	clock := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var clockMu sync.Mutex
	var dry atomic.Int32 // the source runs dry once: said once
	rp := &Replay{Feed: feed, Next: next, Slots: 1, RoundEvery: 50 * time.Microsecond, Seed: 3,
		Now: func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); clock = clock.Add(time.Second); return clock },
		Dry: func() { dry.Add(1) }}
	if err := rp.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(completed) != len(src) {
		t.Fatalf("%d of %d matches completed", len(completed), len(src))
	}
	if n := dry.Load(); n != 1 {
		t.Fatalf("the source ran dry once; Dry was called %d times", n)
	}

	status := map[string]string{}
	last := map[string]Event{}
	liveFrom := -1
	for i, ev := range feed.events {
		if ev.Kind != KindScore {
			continue
		}
		status[ev.MatchID] = ev.Status
		last[ev.MatchID] = ev
		live := 0
		for _, s := range status {
			if s == "live" {
				live++
			}
		}
		if live > 0 && liveFrom < 0 {
			liveFrom = i
		}
		// Until every match has gone live, a slot never leaves a gap.
		if liveFrom >= 0 && live == 0 && len(status) < len(src) {
			t.Fatalf("event %d: no match live, %d of %d started", i, len(status), len(src))
		}
	}
	for _, m := range src {
		ev := last[m.UpstreamID]
		if ev.Status != "completed" || ev.ScoreA == nil {
			t.Fatalf("%s ends %+v", m.UpstreamID, ev)
		}
		a, b := 0, 0
		for j, x := range ev.Maps {
			if !x.Done || x.MapNumber != j+1 {
				t.Fatalf("%s map %d: %+v", m.UpstreamID, j+1, x)
			}
			if x.ScoreA > x.ScoreB {
				a++
			} else {
				b++
			}
			if x.FirstHalfA == nil || *x.FirstHalfA+*x.FirstHalfB != 12 || *x.FirstHalfA+*x.SecondHalfA != x.ScoreA ||
				*x.FirstHalfB+*x.SecondHalfB != x.ScoreB {
				t.Fatalf("%s map %d halves: %+v", m.UpstreamID, j+1, x)
			}
		}
		need := m.BestOf/2 + 1
		if *ev.ScoreA != a || *ev.ScoreB != b || max(a, b) != need {
			t.Fatalf("%s: score %d-%d, maps %d-%d, best of %d", m.UpstreamID, *ev.ScoreA, *ev.ScoreB, a, b, m.BestOf)
		}
		if m.UpstreamID == "m-live" && fmt.Sprint(ev.Maps[0]) != fmt.Sprint(played) {
			t.Fatalf("the live match's played map changed: %+v", ev.Maps[0])
		}
	}
}

package live_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/store"
)

// TestLiveChecksAgreeWithThePipeline lands hostile score events (scores
// impossible for the match's format, unknown statuses, maps outside the
// format, impossible map scores) as the lander does and runs the pipeline
// on them: the live path refuses exactly the events whose lines the
// pipeline quarantines, for the same reason, and accepts the others. So
// REST and the WebSocket never show a score that no snapshot will hold.
func TestLiveChecksAgreeWithThePipeline(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	at := time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)
	worldtest.LandDir(t, st, filepath.Join("..", "pipelines", "testdata", "fixture"), at, nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	formats := map[string]string{"m-1": "bo3", "m-2": "bo1"}
	n := func(v int) *int { return &v }
	s := func(v string) *string { return &v }
	score := func(match, status string, a, b *int) live.Event {
		return live.Event{Kind: live.KindScore, MatchID: match, Status: status, ScoreA: a, ScoreB: b, ChangedAt: now.Add(-time.Hour)}
	}
	with := func(ev live.Event, f func(*live.Event)) live.Event { f(&ev); return ev }
	done := func(num int, name string, a, b int, f func(*live.MapScore)) live.Event {
		ev := score("m-1", "live", n(1), n(0))
		m := live.MapScore{MapNumber: num, MapName: name, ScoreA: a, ScoreB: b, Done: true}
		if f != nil {
			f(&m)
		}
		ev.Maps = []live.MapScore{m}
		return ev
	}
	evs := []live.Event{
		score("m-1", "live", n(1), n(0)),
		score("m-1", "live", n(7), n(3)),
		score("m-1", "live", n(2), n(0)),
		score("m-1", "live", n(1), nil),
		score("m-1", "live", n(-1), n(0)),
		score("m-1", "completed", n(2), n(1)),
		score("m-1", "completed", n(2), n(2)),
		score("m-1", "completed", n(1), n(0)),
		score("m-1", "completed", nil, nil),
		with(score("m-1", "completed", nil, nil), func(e *live.Event) { e.ResultType = s("forfeit") }),
		with(score("m-1", "completed", n(2), n(0)), func(e *live.Event) { e.ResultType = s("abandoned") }),
		score("m-1", "scheduled", n(0), n(0)),
		score("m-1", "cancelled", nil, nil),
		score("m-1", "paused", n(1), n(0)),
		score("m-1", "", n(1), n(0)),
		score("m-2", "live", n(0), n(0)),
		score("m-2", "live", n(1), n(0)),
		score("m-2", "completed", n(1), n(0)),
		with(score("m-1", "live", n(1), n(0)), func(e *live.Event) { e.ChangedAt = now.Add(48 * time.Hour) }),
		with(score("m-1", "live", n(1), n(0)), func(e *live.Event) { e.ChangedAt = time.Time{} }),
		done(1, "de_mirage", 13, 7, nil),
		done(4, "de_mirage", 13, 7, nil),
		done(2, "mirage", 13, 7, nil),
		done(2, "", 13, 7, nil),
		done(2, "de_nuke", 13, 12, nil),
		done(2, "de_nuke", 13, 13, nil),
		done(2, "de_nuke", 16, 14, nil),
		done(2, "de_nuke", 12, 3, nil),
		done(2, "de_nuke", 16, 14, func(m *live.MapScore) { m.OvertimeA = n(4) }),
		done(2, "de_nuke", 13, 7, func(m *live.MapScore) {
			m.FirstHalfA, m.FirstHalfB, m.SecondHalfA, m.SecondHalfB = n(7), n(5), n(6), n(2)
		}),
		done(2, "de_nuke", 13, 7, func(m *live.MapScore) {
			m.FirstHalfA, m.FirstHalfB, m.SecondHalfA, m.SecondHalfB = n(7), n(6), n(6), n(1)
		}),
		done(2, "de_nuke", 13, 7, func(m *live.MapScore) {
			m.FirstHalfA, m.FirstHalfB, m.SecondHalfA, m.SecondHalfB = n(7), n(5), n(5), n(2)
		}),
	}
	price := func(market, outcome string, p float64, f func(*live.Event)) live.Event {
		ev := live.Event{Kind: live.KindPrice, MatchID: "m-1", Book: "bk-1", Market: market, Outcome: outcome, Price: p,
			CapturedAt: now.Add(-time.Minute)}
		if f != nil {
			f(&ev)
		}
		return ev
	}
	evs = append(evs,
		price("match_winner", "home", 1.8, nil),
		price("match_winner", "draw", 3.5, nil),
		price("match_winner", "home", 1.0, nil),
		price("match_winner", "home", 0.5, nil),
		price("total_maps", "over", 1.9, func(e *live.Event) { e.Line = new(2.5) }),
		price("total_maps", "home", 1.9, func(e *live.Event) { e.Line = new(2.5) }),
		price("map_winner", "away", 2.1, func(e *live.Event) { e.MapNumber = n(1) }),
		price("map_handicap", "over", 2.1, func(e *live.Event) { e.Line = new(-1.5) }),
		price("corners", "home", 2.1, nil),
		price("match_winner", "", 2.1, nil),
		price("match_winner", "away", 2.1, func(e *live.Event) { e.Book = "" }),
		price("match_winner", "away", 2.1, func(e *live.Event) { e.CapturedAt = now.Add(48 * time.Hour) }),
	)
	landed, err := live.LandEvents(ctx, st, t.TempDir(), "live", evs, now)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// The pipeline's verdict on each line of the live batch.
	b, err := store.GetBytes(ctx, st, pipelines.QuarantinePrefix+rep.RunID+".ndjson")
	if err != nil {
		t.Fatal(err)
	}
	verdict := map[string]string{} // entity/line_no → reason
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var q struct {
			BatchID string `json:"batch_id"`
			Entity  string `json:"entity"`
			LineNo  int    `json:"line_no"`
			Reason  string `json:"reason"`
		}
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			t.Fatal(err)
		}
		if q.BatchID != landed.BatchID {
			continue // the fixture's own rejects
		}
		verdict[q.Entity+"/"+itoa(q.LineNo)] = q.Reason
	}
	mapLine, priceLine := 0, 0
	for i, ev := range evs {
		if ev.Kind == live.KindPrice {
			priceLine++
			got := live.EventProblems(&ev, "", now)[0]
			if want := verdict["price_captures/"+itoa(priceLine)]; got != want {
				t.Errorf("event %d (%s %s %v): live %q, pipeline %q", i, ev.Market, ev.Outcome, ev.Price, got, want)
			}
			continue
		}
		probs := live.EventProblems(&ev, formats[ev.MatchID], now)
		got := probs[0]
		if want := verdict["match_updates/"+itoa(i+1)]; got != want {
			t.Errorf("event %d (%s %v-%v %s): live %q, pipeline %q", i, ev.Status, deref(ev.ScoreA), deref(ev.ScoreB), ev.MatchID, got, want)
		}
		for j, m := range ev.Maps {
			mapLine++
			got := probs[1+j] // every map of these events is finished
			if want := verdict["map_results/"+itoa(mapLine)]; got != want {
				t.Errorf("event %d, map %d %q %d-%d: live %q, pipeline %q", i, m.MapNumber, m.MapName, m.ScoreA, m.ScoreB, got, want)
			}
		}
	}
	if len(verdict) == 0 {
		t.Fatalf("the pipeline quarantined nothing of the live batch: %v", rep.Quarantined)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

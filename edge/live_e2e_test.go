package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/eodata/eo/live"
	"github.com/eodata/eo/push"
	"github.com/eodata/eo/raw"
)

// recordFeed records what a replay publishes.
type recordFeed struct {
	mu     sync.Mutex
	events []live.Event
}

func (f *recordFeed) Publish(_ context.Context, ev live.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
	return nil
}

func (f *recordFeed) Subscribe(context.Context) (<-chan live.Event, error) {
	return nil, fmt.Errorf("recordFeed only records")
}

// stepClock returns a clock that moves by step on every reading.
func stepClock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(step)
		return t
	}
}

// wsState is what a WebSocket client holds of one match: the last match
// frame's data and the latest odds line per series (snapshot frame, then
// updates upserted by market, outcome and source).
type wsState struct {
	match json.RawMessage
	odds  map[string]json.RawMessage
}

type seriesRow struct {
	MarketID   string `json:"market_id"`
	OutcomeKey string `json:"outcome_key"`
	Source     string `json:"source"`
}

func (s *wsState) upsertOdds(t *testing.T, data json.RawMessage) {
	t.Helper()
	var rows []json.RawMessage
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatalf("odds frame data is not an array: %s", data)
	}
	for _, r := range rows {
		var k seriesRow
		if err := json.Unmarshal(r, &k); err != nil {
			t.Fatal(err)
		}
		s.odds[k.MarketID+"|"+k.OutcomeKey+"|"+k.Source] = r
	}
}

// barrier reads frames until every frame queued before it was handled: it
// subscribes to a sentinel target and reads up to its acknowledgement
// (frames on a connection are sent in order), applying the updates of the
// match's targets to st.
func barrier(t *testing.T, c *wsClient, sentinel, mt, ot string, st *wsState, seq map[string]int) {
	t.Helper()
	c.send(map[string]string{"type": "subscribe", "target": sentinel})
	for {
		f, err := c.read()
		if err != nil {
			t.Fatalf("reading frames: %v", err)
		}
		switch {
		case f.Type == "subscribed" && f.Target == sentinel:
			c.expect("snapshot", sentinel)
			c.send(map[string]string{"type": "unsubscribe", "target": sentinel})
			c.expect("unsubscribed", sentinel)
			return
		case f.Type == "update" && (f.Target == mt || f.Target == ot):
			// Feed positions: increasing, a swap's update repeating the
			// position of the update before it.
			if f.Seq < seq[f.Target] {
				t.Fatalf("%s: seq %d after %d", f.Target, f.Seq, seq[f.Target])
			}
			seq[f.Target] = f.Seq
			if f.Target == mt {
				st.match = f.Data
			} else {
				st.upsertOdds(t, f.Data)
			}
		default:
			t.Fatalf("unexpected frame %s", f.raw)
		}
	}
}

// nanos gives a non-zero time a nanosecond part below the microsecond.
func nanos(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(789 * time.Nanosecond)
}

// TestLiveReplayEndToEnd plays a match from scheduled to completed through
// the real live path (replay events, tracker, view, WebSocket hub, a real
// WebSocket client) and, after every batch of events and across two
// snapshot swaps (the events landed in the raw area and run through the real
// pipeline), checks that REST and the WebSocket agree and that REST never
// contradicts itself.
func TestLiveReplayEndToEnd(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	ctx := context.Background()
	m, up := liveMatchOf(t, ls)
	id := m.ID.String()
	mt, ot := "match:"+id, "odds:"+id
	sentinel := sentinelOf(ls, m)

	// The match, played out by the local replay, recorded; then batches as
	// the tracker drains its feed: a round (a score event and the prices
	// that follow it, all of one instant) split in two at a random point,
	// so the captures of an instant reach the aggregator in two batches.
	rounds := replayRounds(t, up, 11)
	// Times as a live feed stamps them (time.Now: nanoseconds), where the
	// pipeline keeps microseconds.
	for _, r := range rounds {
		for i := range r {
			r[i].ChangedAt = nanos(r[i].ChangedAt)
			r[i].CapturedAt = nanos(r[i].CapturedAt)
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	var batches [][]live.Event
	for _, r := range rounds {
		cut := 1 + rng.IntN(len(r))
		batches = append(batches, r[:cut])
		if cut < len(r) {
			batches = append(batches, r[cut:])
		}
	}
	if len(batches) < 30 {
		t.Fatalf("the replay produced %d batches", len(batches))
	}

	c := ls.open(t)
	st := &wsState{odds: map[string]json.RawMessage{}}
	seq := map[string]int{}
	c.send(map[string]string{"type": "subscribe", "target": mt})
	c.expect("subscribed", mt)
	f := c.expect("snapshot", mt)
	st.match, seq[mt] = f.Data, f.Seq
	c.send(map[string]string{"type": "subscribe", "target": ot})
	c.expect("subscribed", ot)
	f = c.expect("snapshot", ot)
	st.upsertOdds(t, f.Data)
	seq[ot] = f.Seq

	statuses := map[string]bool{}
	sawLiveOdds := false
	check := func(when string) {
		t.Helper()
		// REST detail (include=maps) is byte for byte the match frame.
		r := ls.get(t, "/v1/cs2/matches/"+id+"?include=maps")
		var detail struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(r.body, &detail); err != nil || !bytes.Equal(detail.Data, st.match) {
			t.Fatalf("%s: REST and WebSocket disagree on the match:\nREST %s\nWS   %s", when, detail.Data, st.match)
		}
		var row struct {
			Status string `json:"status"`
			ScoreA *int   `json:"score_a"`
			ScoreB *int   `json:"score_b"`
			Maps   []struct {
				ScoreA int    `json:"score_a"`
				ScoreB int    `json:"score_b"`
				Status string `json:"status"`
			} `json:"maps"`
		}
		if err := json.Unmarshal(detail.Data, &row); err != nil {
			t.Fatal(err)
		}
		statuses[row.Status] = true
		if row.Status == "live" || row.Status == "completed" {
			a, b := 0, 0
			for _, x := range row.Maps {
				if x.Status != "played" {
					t.Fatalf("%s: a map with status %q", when, x.Status)
				}
				if x.ScoreA > x.ScoreB {
					a++
				} else {
					b++
				}
			}
			if row.ScoreA == nil || *row.ScoreA != a || *row.ScoreB != b {
				t.Fatalf("%s: score %v-%v but played maps %d-%d: %s", when, row.ScoreA, row.ScoreB, a, b, detail.Data)
			}
		}
		// include=odds holds the same latest line per series as the client.
		r = ls.get(t, "/v1/cs2/matches/"+id+"?include=odds")
		var od struct {
			Data struct {
				Odds []json.RawMessage `json:"odds"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.body, &od); err != nil {
			t.Fatal(err)
		}
		rest := &wsState{odds: map[string]json.RawMessage{}}
		b, _ := json.Marshal(od.Data.Odds)
		rest.upsertOdds(t, b)
		if len(rest.odds) != len(st.odds) {
			t.Fatalf("%s: REST has %d odds series, the WebSocket client %d", when, len(rest.odds), len(st.odds))
		}
		for k, v := range rest.odds {
			if !bytes.Equal(v, st.odds[k]) {
				t.Fatalf("%s: series %s: REST %s, WebSocket %s", when, k, v, st.odds[k])
			}
			if bytes.Contains(v, []byte(`"captured_at":"`+fixtureNow.Add(time.Hour).Format("2006-01-02"))) {
				sawLiveOdds = true
			}
		}
		// Every status filter returns exactly the rows of that status the
		// unfiltered list holds, and the match is where its row says.
		all := map[string][]string{}
		for _, x := range ls.get(t, "/v1/cs2/matches?limit=200").data(t) {
			r := x.(map[string]any)
			all[r["status"].(string)] = append(all[r["status"].(string)], r["id"].(string))
		}
		for _, s := range []string{"scheduled", "live", "completed", "cancelled"} {
			var got []string
			for _, x := range ls.get(t, "/v1/cs2/matches?limit=200&status="+s).data(t) {
				r := x.(map[string]any)
				if r["status"] != s {
					t.Fatalf("%s: ?status=%s returned a %s row", when, s, r["status"])
				}
				got = append(got, r["id"].(string))
			}
			if fmt.Sprint(got) != fmt.Sprint(all[s]) {
				t.Fatalf("%s: ?status=%s has %d rows, the unfiltered list %d", when, s, len(got), len(all[s]))
			}
		}
		in := false
		for _, x := range all[row.Status] {
			in = in || x == id
		}
		if !in {
			t.Fatalf("%s: the match is not among the %s rows of the list", when, row.Status)
		}
	}
	check("before the first event")

	var landed []live.Event
	swap := func(when string) {
		t.Helper()
		if _, err := live.LandEvents(ctx, ls.store, t.TempDir(), "live", landed, fixtureNow.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		landed = nil
		before := ls.Current().ID
		frame := st.match
		if _, err := publishOnce(ctx, ls.store, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		if err := ls.Load(ctx); err != nil || ls.Current().ID == before {
			t.Fatalf("no swap %s: %v", when, err)
		}
		barrier(t, c, sentinel, mt, ot, st, seq)
		check("after the swap " + when)
		// The snapshot lands only events the client was shown: the match
		// it serves is the one the client holds, byte for byte.
		if !bytes.Equal(st.match, frame) {
			t.Fatalf("the swap %s changed the match:\nbefore %s\nafter  %s", when, frame, st.match)
		}
	}
	// The live eo_market lines must be the lines the pipeline computes from
	// the same captures: compare the latest line of each series before a
	// swap (live) and after it (the snapshot's).
	type lineKey struct {
		ID        string  `json:"id"`
		Price     float64 `json:"price"`
		BookCount *int    `json:"book_count"`
		OpenPrice float64 `json:"open_price"`
		Label     string  `json:"label"`
		Source    string  `json:"source"`
		Series    string  `json:"-"`
	}
	latest := func() map[string]lineKey {
		out := map[string]lineKey{}
		for k, raw := range st.odds {
			var l lineKey
			if err := json.Unmarshal(raw, &l); err != nil {
				t.Fatal(err)
			}
			if l.Source == "eo_market" {
				out[k] = l
			}
		}
		return out
	}
	mapDone := false
	for i, b := range batches {
		ls.Push().Tracker().Apply(b)
		landed = append(landed, b...)
		barrier(t, c, sentinel, mt, ot, st, seq)
		check(fmt.Sprintf("after batch %d of %d", i+1, len(batches)))
		// Swap once the first map is over, the series still live.
		if !mapDone && b[0].Kind == live.KindScore && b[0].ScoreA != nil && *b[0].ScoreA+*b[0].ScoreB == 1 {
			mapDone = true
			live := latest()
			held := maps.Clone(st.odds)
			swap("mid-series")
			// Every series the client holds is, byte for byte, the line
			// the pipeline computed from the same captures.
			for k, raw := range held {
				if !bytes.Equal(st.odds[k], raw) {
					t.Errorf("series %s: live %s\nthe snapshot's %s", k, raw, st.odds[k])
				}
			}
			batch := latest()
			if len(live) == 0 || len(live) != len(batch) {
				t.Fatalf("eo_market series: %d live, %d in the snapshot", len(live), len(batch))
			}
			for k, l := range live {
				if b := batch[k]; b.ID != l.ID || b.Price != l.Price || *b.BookCount != *l.BookCount || b.OpenPrice != l.OpenPrice || b.Label != l.Label {
					t.Fatalf("series %s: live line %+v, the pipeline's %+v", k, l, b)
				}
			}
			if n := ls.View().LiveMatches(); n != 0 {
				t.Fatalf("the snapshot holds every landed event, yet %d matches keep live state", n)
			}
		}
	}
	if !mapDone || !statuses["scheduled"] || !statuses["live"] || !statuses["completed"] || !sawLiveOdds {
		t.Fatalf("the replay did not cover the match's life: statuses %v, map swap %v, live odds %v", statuses, mapDone, sawLiveOdds)
	}
	swap("after the series")
	if n := ls.View().LiveMatches(); n != 0 {
		t.Fatalf("after the final swap %d matches keep live state", n)
	}
	// The landed events passed the pipeline's checks (nothing quarantined
	// would have left the match live in the snapshot).
	if m := ls.Current().MatchRow(m.ID); m.Status != "completed" || m.WinnerTeamID == nil {
		t.Fatalf("the snapshot after the series: %+v", m)
	}
	// The fixture's batch and the two landings (compacted into one once
	// their hour has settled: the lineage still names both).
	bs, err := raw.ListBatches(ctx, ls.store)
	landings := 0
	for _, b := range bs {
		landings += len(b.Lineage())
	}
	if err != nil || landings < 3 {
		t.Fatalf("raw batches: %d standing for %d landings, %v", len(bs), landings, err)
	}
}

package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/redistest"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/push"
	"github.com/eodata/eo/view"
)

// appliedSeq is the feed position the server's view has applied.
func appliedSeq(ls *liveServer) uint64 {
	var p live.Position
	ls.view.Hold(func(*view.View) { p = ls.Push().Tracker().Position() })
	return p.Seq
}

// publishAll publishes evs on the server's feed and waits until every
// server given has applied them.
func publishAll(t *testing.T, feed live.Feed, evs []live.Event, servers ...*liveServer) {
	t.Helper()
	ctx := context.Background()
	for i := range evs {
		if err := feed.Publish(ctx, evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	pos, err := feed.(live.Positioner).Position(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ls := range servers {
		waitFor(t, "the events to be applied", func() bool { return appliedSeq(ls) == pos })
	}
}

// drain reads the frames queued on c before now (a barrier: it subscribes
// to sentinel and reads up to its acknowledgement) and returns them.
func drain(t *testing.T, c *wsClient, sentinel string) []frame {
	t.Helper()
	c.send(map[string]string{"type": "subscribe", "target": sentinel})
	var out []frame
	for {
		f, err := c.read()
		if err != nil {
			t.Fatalf("reading frames: %v", err)
		}
		if f.Target == sentinel && f.Type == "subscribed" {
			c.expect("snapshot", sentinel)
			c.send(map[string]string{"type": "unsubscribe", "target": sentinel})
			c.expect("unsubscribed", sentinel)
			return out
		}
		out = append(out, f)
	}
}

// after is the raw update frames of target in fs numbered after n.
func after(fs []frame, target string, n int) []string {
	var out []string
	for _, f := range fs {
		if f.Type == "update" && f.Target == target && f.Seq > n {
			out = append(out, f.raw)
		}
	}
	return out
}

// lastSeq is the seq of the last frame of target in fs (else n).
func lastSeq(fs []frame, target string, n int) int {
	for _, f := range fs {
		if f.Target == target && (f.Type == "update" || f.Type == "snapshot") {
			n = f.Seq
		}
	}
	return n
}

// resume subscribes c to target with since_seq n and returns the frames
// answered (up to the next barrier).
func resume(t *testing.T, c *wsClient, target string, n int, sentinel string) []frame {
	t.Helper()
	c.send(map[string]any{"type": "subscribe", "target": target, "since_seq": n})
	c.expect("subscribed", target)
	return drain(t, c, sentinel)
}

// replayed checks that got are exactly the update frames want, in order.
func replayed(t *testing.T, what string, got []frame, want []string) {
	t.Helper()
	var raw []string
	for _, f := range got {
		raw = append(raw, f.raw)
	}
	if len(want) == 0 || len(raw) != len(want) {
		t.Fatalf("%s: %d frames replayed, %d missed:\ngot  %.600q\nwant %.600q", what, len(raw), len(want), raw, want)
	}
	for i := range raw {
		if raw[i] != want[i] {
			t.Fatalf("%s: frame %d of %d:\ngot  %.400s\nwant %.400s", what, i+1, len(raw), raw[i], want[i])
		}
	}
}

// replayEvents records a best-of-three played out by the local replay.
func replayEvents(t *testing.T, up string) []live.Event {
	t.Helper()
	rec := &recordFeed{}
	rp := &live.Replay{Feed: rec, Matches: []live.ReplayMatch{{UpstreamID: up, BestOf: 3, Status: "scheduled"}},
		RoundEvery: time.Microsecond, Seed: 3, Now: stepClock(fixtureNow.Add(time.Hour), 5*time.Second)}
	if err := rp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec.events
}

// rounds splits evs before every score event: a round and its prices.
func rounds(evs []live.Event) [][]live.Event {
	var out [][]live.Event
	for _, ev := range evs {
		if ev.Kind == live.KindScore || len(out) == 0 {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], ev)
	}
	return out
}

// TestWSResumeEndToEnd plays a match through the real live path (feed,
// tracker, view, hub, real WebSocket clients). A client disconnects
// mid-match, the match goes on, and the client reconnects with since_seq
// for its two targets: it receives exactly the update frames it missed, byte
// for byte those a client that stayed connected received, in order, and
// then the live updates with nothing lost or repeated at the seam. Past the
// buffer it gets a snapshot frame with resync true, equal to REST; ahead of
// the server too.
func TestWSResumeEndToEnd(t *testing.T) {
	ls := newLiveServer(t, push.Options{ResumeBuffer: 20})
	m, up := liveMatchOf(t, ls)
	id := m.ID.String()
	mt, ot := "match:"+id, "odds:"+id
	sentinel := sentinelOf(ls, m)
	rs := rounds(replayEvents(t, up))
	if len(rs) < 36 {
		t.Fatalf("the replay played %d rounds", len(rs))
	}
	// A round at a time, applied before the next: at least one match
	// update a round.
	play := func(rs [][]live.Event) {
		for _, r := range rs {
			publishAll(t, ls.feed, r, ls)
		}
	}
	// obs stays connected throughout: what it receives is what c missed.
	obs, c := ls.open(t), ls.open(t)
	var seen []frame
	for _, x := range []*wsClient{obs, c} {
		for _, target := range []string{mt, ot} {
			x.send(map[string]string{"type": "subscribe", "target": target})
			x.expect("subscribed", target)
			f := x.expect("snapshot", target)
			if x == c {
				seen = append(seen, f)
			}
		}
	}
	play(rs[:6])
	seen = append(seen, drain(t, c, sentinel)...)
	nm, no := lastSeq(seen, mt, 0), lastSeq(seen, ot, 0)
	if len(after(seen, mt, 0)) == 0 || len(after(seen, ot, 0)) == 0 {
		t.Fatalf("no updates before the disconnect: %d frames", len(seen))
	}
	c.c.Close() // mid-match

	play(rs[6:9])
	missed := drain(t, obs, sentinel)
	c2 := ls.open(t)
	replayed(t, "match after a reconnect", resume(t, c2, mt, nm, sentinel), after(missed, mt, nm))
	replayed(t, "odds after a reconnect", resume(t, c2, ot, no, sentinel), after(missed, ot, no))
	nReplayed := len(after(missed, mt, nm)) + len(after(missed, ot, no))
	// The resumed client holds what REST serves.
	last := missed[len(missed)-1]
	for _, f := range missed {
		if f.Target == mt {
			last = f
		}
	}
	if rest := ls.get(t, "/v1/cs2/matches/"+id+"?include=maps"); !bytes.Contains(rest.body, last.Data) {
		t.Fatalf("the last replayed match frame is not what REST serves:\nws   %s\nrest %s", last.Data, rest.body)
	}
	// Live again: the same frames as the client that never left.
	play(rs[9:12])
	want := drain(t, obs, sentinel)
	got := drain(t, c2, sentinel)
	var wantRaw []string
	for _, f := range want {
		wantRaw = append(wantRaw, f.raw)
	}
	replayed(t, "live after the resume", got, wantRaw)

	// Past the buffer: more than 20 updates of each target missed.
	nm = lastSeq(got, mt, nm)
	c2.c.Close()
	play(rs[12:36])
	missed = drain(t, obs, sentinel)
	if n := len(after(missed, mt, nm)); n <= 20 {
		t.Fatalf("only %d match updates missed; the test needs more than the buffer's 20", n)
	}
	c3 := ls.open(t)
	pos := appliedSeq(ls)
	rest := ls.get(t, "/v1/cs2/matches/"+id+"?include=maps")
	for _, n := range []int{nm, int(pos) + 1} { // too old; ahead of the server
		fs := resume(t, c3, mt, n, sentinel)
		if len(fs) != 1 || fs[0].Type != "snapshot" || !bytes.Contains([]byte(fs[0].raw), []byte(`"resync":true`)) ||
			fs[0].Seq != int(pos) || !bytes.Contains(rest.body, fs[0].Data) {
			t.Fatalf("since_seq %d (position %d): want a resync snapshot as REST serves it, got %d frames: %.300v", n, pos, len(fs), fs)
		}
	}
	waitMetrics(t, ls.testServer, map[string]float64{`eo_ws_resumes_total{outcome="replayed"}`: 2,
		`eo_ws_resumes_total{outcome="resync"}`: 2, "eo_ws_resume_updates_total": float64(nReplayed),
		"eo_ws_resume_buffer_targets": 2})
}

// TestWSResumeAcrossInstances: two instances on one Redis apply the same
// numbered feed. A client subscribed on A disconnects; the match goes on;
// it resumes on B, where nobody ever subscribed to the target, and receives
// from B exactly the frames A's clients received meanwhile.
func TestWSResumeAcrossInstances(t *testing.T) {
	rc := redistest.Client(t)
	a, b := newLiveServer(t, redisLive(rc)), newLiveServer(t, redisLive(rc))
	m, up := liveMatchOf(t, a)
	mt, ot := "match:"+m.ID.String(), "odds:"+m.ID.String()
	sentinel := sentinelOf(a, m)
	rs := rounds(replayEvents(t, up))
	obs, c := a.open(t), a.open(t)
	for _, x := range []*wsClient{obs, c} {
		for _, target := range []string{mt, ot} {
			x.send(map[string]string{"type": "subscribe", "target": target})
			x.expect("subscribed", target)
			x.expect("snapshot", target)
		}
	}
	pub := &live.RedisFeed{Client: rc}
	// One event at a time, applied by both before the next: the instances
	// apply the same batches, so their frames are the same bytes.
	play := func(rs [][]live.Event) {
		for _, r := range rs {
			for i := range r {
				publishAll(t, pub, r[i:i+1], a, b)
			}
		}
	}
	play(rs[:3])
	seen := drain(t, c, sentinel)
	nm, no := lastSeq(seen, mt, 0), lastSeq(seen, ot, 0)
	if nm == 0 || no == 0 {
		t.Fatalf("no updates before the disconnect: %.300v", seen)
	}
	c.c.Close()
	play(rs[3:8])
	missed := drain(t, obs, sentinel)
	cb := b.open(t)
	replayed(t, "match, resumed on the other instance", resume(t, cb, mt, nm, sentinel), after(missed, mt, nm))
	replayed(t, "odds, resumed on the other instance", resume(t, cb, ot, no, sentinel), after(missed, ot, no))

	// Rounds published at once: each instance conflates the events it
	// drained together, so the frames may differ in their cut; replayed on
	// top of what the client held, they give what B serves.
	st := &wsState{odds: map[string]json.RawMessage{}}
	var held []frame
	for _, target := range []string{mt, ot} {
		cb.send(map[string]string{"type": "unsubscribe", "target": target})
		cb.expect("unsubscribed", target)
		cb.send(map[string]string{"type": "subscribe", "target": target})
		cb.expect("subscribed", target)
		held = append(held, cb.expect("snapshot", target))
	}
	st.match = held[0].Data
	st.upsertOdds(t, held[1].Data)
	nm, no = held[0].Seq, held[1].Seq
	cb.c.Close()
	for _, r := range rs[8:14] {
		publishAll(t, pub, r, a, b)
	}
	ca := a.open(t)
	for target, n := range map[string]int{mt: nm, ot: no} {
		prev := n
		for _, f := range resume(t, ca, target, n, sentinel) {
			if f.Type != "update" || f.Seq <= prev {
				t.Fatalf("%s resumed at %d: frame %s after seq %d", target, n, f.raw, prev)
			}
			prev = f.Seq
			if target == mt {
				st.match = f.Data
			} else {
				st.upsertOdds(t, f.Data)
			}
		}
	}
	restMatch := a.get(t, "/v1/cs2/matches/"+m.ID.String()+"?include=maps")
	if !bytes.Contains(restMatch.body, st.match) {
		t.Fatalf("after a resume on A the client holds\n%s\nA serves\n%s", st.match, restMatch.body)
	}
	var od struct {
		Data struct {
			Odds json.RawMessage `json:"odds"`
		} `json:"data"`
	}
	if err := json.Unmarshal(a.get(t, "/v1/cs2/matches/"+m.ID.String()+"?include=odds").body, &od); err != nil {
		t.Fatal(err)
	}
	rest := &wsState{odds: map[string]json.RawMessage{}}
	rest.upsertOdds(t, od.Data.Odds)
	if len(rest.odds) != len(st.odds) {
		t.Fatalf("A serves %d odds series, the resumed client holds %d", len(rest.odds), len(st.odds))
	}
	for k, v := range rest.odds {
		if !bytes.Equal(v, st.odds[k]) {
			t.Fatalf("series %s: A serves %s, the resumed client holds %s", k, v, st.odds[k])
		}
	}
}

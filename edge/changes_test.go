package edge

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/cursor"
	"github.com/eodata/eo/internal/testkit/redistest"
	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/push"
	"github.com/eodata/eo/raw"
)

// replayBatches plays a match of ls's snapshot out with the local replay and
// returns its events, one batch a round.
func replayBatches(t *testing.T, ls *liveServer) (*Match, [][]live.Event) {
	t.Helper()
	m, up := liveMatchOf(t, ls)
	return m, replayRounds(t, up, 3)
}

// replayRounds plays a best-of-3 of the upstream match up (the replay's
// seed) and returns its events, one batch a round: its score event and the
// prices after it.
func replayRounds(t *testing.T, up string, seed uint64) [][]live.Event {
	t.Helper()
	rec := &recordFeed{}
	rp := &live.Replay{Feed: rec, Matches: []live.ReplayMatch{{UpstreamID: up, BestOf: 3, Status: "scheduled"}},
		RoundEvery: time.Microsecond, Seed: seed, Now: stepClock(fixtureNow.Add(time.Hour), 5*time.Second)}
	if err := rp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var batches [][]live.Event
	for _, ev := range rec.events {
		if ev.Kind == live.KindScore || len(batches) == 0 {
			batches = append(batches, nil)
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], ev)
	}
	return batches
}

// TestChangesLiveEntriesPageAndSupersede: the live changes come after the
// cursor, oldest first, one page of limit at a time (has_more until the
// last); an entity changed again is listed once, at its latest change; a
// caught-up cursor lists nothing and stays usable; a cursor taken before
// changes sees them all.
func TestChangesLiveEntriesPageAndSupersede(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	ts := ls.testServer
	m, batches := replayBatches(t, ls)
	start := getChanges(t, ts, "/v1/cs2/changes").Meta.NextCursor
	if p := getChanges(t, ts, "/v1/cs2/changes?since="+url.QueryEscape(start)); len(p.Data) != 0 || p.Meta.HasMore {
		t.Fatalf("nothing changed, yet %+v", p)
	}
	ls.now = ls.now.Add(123456789 * time.Nanosecond) // the edge's clock has nanoseconds; changed_at does not
	for _, b := range batches[:4] {
		ls.Push().Tracker().Apply(b)
	}
	// Paged one entry at a time: the match and its odds, once each.
	var got []string
	cursor := start
	for i := 0; ; i++ {
		p := getChanges(t, ts, "/v1/cs2/changes?limit=1&since="+url.QueryEscape(cursor))
		for _, e := range p.Data {
			if e.Source != "live" || e.Kind != "updated" || e.EntityID != m.ID.String() {
				t.Fatalf("entry %+v", e)
			}
			if want := ls.now.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano); e.ChangedAt != want {
				t.Fatalf("changed_at %q, want %q (microseconds)", e.ChangedAt, want)
			}
			got = append(got, e.EntityType)
		}
		cursor = p.Meta.NextCursor
		if !p.Meta.HasMore {
			break
		}
		if i > 5 {
			t.Fatal("the pages do not end")
		}
	}
	if fmt.Sprint(got) != "[match odds]" {
		t.Fatalf("entries %v, want the match and its odds once each", got)
	}
	caught := cursor
	if p := getChanges(t, ts, "/v1/cs2/changes?since="+url.QueryEscape(caught)); len(p.Data) != 0 || p.Meta.HasMore {
		t.Fatalf("a caught-up cursor lists %+v", p)
	}
	// A later round: listed after the caught-up cursor, and once after the
	// first cursor too.
	ls.Push().Tracker().Apply(batches[4])
	p := getChanges(t, ts, "/v1/cs2/changes?since="+url.QueryEscape(caught))
	if len(p.Data) == 0 || p.Data[0].EntityType != "match" {
		t.Fatalf("after another round: %+v", p)
	}
	served := len(got) + len(p.Data)
	if p := getChanges(t, ts, "/v1/cs2/changes?since="+url.QueryEscape(start)); len(p.Data) != 2 || p.Meta.HasMore {
		t.Fatalf("from the first cursor after five rounds: %+v", p)
	}
	served += 2
	if _, n := ls.Push().Changes().Head(); n != 2 {
		t.Fatalf("%d live changes held, want 2 (the match, its odds)", n)
	}
	waitMetrics(t, ts, map[string]float64{`eo_changes_entries_total{source="live"}`: float64(served), "eo_changes_live_entries": 2})
}

// TestChangesCursorErrors: a cursor older than the snapshot's change log
// is 410 cursor_expired (counted), a malformed one, a list cursor and a
// forged one are 400 invalid_cursor; a snapshot's log entries come before
// the live changes.
func TestChangesCursorErrors(t *testing.T) {
	ts := newTestServer(t)
	log := ts.View().Snapshot().Changes()
	if !log.Present || log.Horizon <= 0 {
		t.Fatalf("the fixture snapshot's change log: %+v", log)
	}
	old := ts.cursors.AppendChanges(nil, cursor.Changes{Pos: log.Horizon - 1, Key: cursor.ChangeKey{Type: push.KeyAll}})
	r := ts.get(t, "/v1/cs2/changes?since="+url.QueryEscape(string(old)))
	if r.status != 410 || r.code(t) != "cursor_expired" {
		t.Fatalf("an expired cursor: %d %s", r.status, r.body)
	}
	listCursor := ts.get(t, "/v1/cs2/matches?limit=1").json(t)["meta"].(map[string]any)["next_cursor"].(string)
	forged := cursor.NewCodec([]byte("another secret")).AppendChanges(nil, cursor.Changes{Pos: log.Horizon})
	for _, since := range []string{"nope", listCursor, string(forged)} {
		if r := ts.get(t, "/v1/cs2/changes?since="+url.QueryEscape(since)); r.status != 400 || r.code(t) != "invalid_cursor" {
			t.Errorf("since=%s: %d %s", since, r.status, r.body)
		}
	}
	// A cursor at the horizon reads the log's entries (none in the
	// fixture's first snapshot) and a cursor ahead of the log (another
	// instance's, on a newer snapshot) keeps its position.
	at := ts.cursors.AppendChanges(nil, cursor.Changes{Pos: log.Horizon})
	if p := getChanges(t, ts, "/v1/cs2/changes?since="+url.QueryEscape(string(at))); len(p.Data) != len(log.Entries) {
		t.Fatalf("from the horizon: %+v", p)
	}
	ahead := cursor.Changes{Pos: log.Head() + 10, Seq: 99, Key: cursor.ChangeKey{Type: push.KeyAll}}
	p := getChanges(t, ts, "/v1/cs2/changes?since="+url.QueryEscape(string(ts.cursors.AppendChanges(nil, ahead))))
	if next, ok := ts.cursors.DecodeChanges(p.Meta.NextCursor); len(p.Data) != 0 || !ok || next != ahead {
		t.Fatalf("a cursor ahead: %+v, next %+v", p, next)
	}
	waitMetrics(t, ts, map[string]float64{"eo_changes_expired_total": 1})
}

// TestChangesIsMeteredLikeAList: each call draws one unit of the quota;
// a sandbox key gets 403 sandbox_scope and draws nothing.
func TestChangesIsMeteredLikeAList(t *testing.T) {
	ms, keys := embeddedMeteredServer(t)
	std, sandbox := newTestKey(t, keys, access.PlanStandard), newTestKey(t, keys, access.PlanSandbox)
	quota := func(r result) int {
		n, err := strconv.Atoi(r.header.Get("X-Quota-Remaining"))
		if err != nil {
			t.Fatalf("X-Quota-Remaining %q (%d %s)", r.header.Get("X-Quota-Remaining"), r.status, r.body)
		}
		return n
	}
	first := ms.get(t, "/v1/cs2/changes", std)
	var p changesPage
	if first.status != 200 || quota(first) != int(access.DefaultPlans()[access.PlanStandard].MonthlyQuota)-1 {
		t.Fatalf("first call: %d %s", first.status, first.body)
	}
	p.Meta.NextCursor = first.json(t)["meta"].(map[string]any)["next_cursor"].(string)
	next := ms.get(t, "/v1/cs2/changes?since="+url.QueryEscape(p.Meta.NextCursor), std)
	if next.status != 200 || quota(next) != quota(first)-1 {
		t.Fatalf("second call: %d, quota %s after %s", next.status, next.header.Get("X-Quota-Remaining"), first.header.Get("X-Quota-Remaining"))
	}
	if r := ms.get(t, "/v1/cs2/changes", sandbox); r.status != 403 || r.code(t) != "sandbox_scope" || r.header.Get("X-Quota-Remaining") != "" {
		t.Fatalf("a sandbox key: %d %s", r.status, r.body)
	}
}

// TestChangesCursorSurvivesARestart: a cursor taken on one edge reads, on
// a fresh edge of the same store (a restart, or another instance) that
// loaded a newer snapshot, the changes the pipeline found in between: here
// a team renamed (the team and its matches updated).
func TestChangesCursorSurvivesARestart(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	cursor := getChanges(t, ts, "/v1/cs2/changes").Meta.NextCursor
	m := ts.snap().Matches()[0]
	match := fixtureLine(t, ts.store, raw.Matches, ts.snap().Upstream(m.ID))
	team := fixtureLine(t, ts.store, raw.Teams, match["team_a_id"].(string))
	team["name"] = team["name"].(string) + " Renamed"
	team["changed_at"] = fixtureNow.Add(time.Hour).Format(time.RFC3339)
	worldtest.LandDir(t, ts.store, t.TempDir(), fixtureNow.Add(2*time.Hour), map[raw.Entity][]string{raw.Teams: {jsonLine(t, team)}})
	if _, err := publishOnce(ctx, ts.store, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	restarted := loadedTestServer(t, ts.store, &testAuth{keys: map[string]access.Principal{
		goodKey: {KeyID: "k1", AccountID: "a1", Plan: "standard", Display: "eo_live_…0001"}}}, nil)
	p := getChanges(t, restarted, "/v1/cs2/changes?since="+url.QueryEscape(cursor))
	kinds := map[string]int{}
	for _, e := range p.Data {
		if e.Source != "snapshot" {
			t.Fatalf("entry %+v", e)
		}
		kinds[e.EntityType+" "+e.Kind]++
		if e.EntityType == "team" && e.EntityID != m.TeamAID.String() {
			t.Fatalf("the renamed team is %s, the entry names %s", m.TeamAID, e.EntityID)
		}
	}
	if kinds["team updated"] != 1 || kinds["match updated"] == 0 || p.Meta.HasMore {
		t.Fatalf("after the rename, on a restarted edge: %v", kinds)
	}
	// The old edge, still on the old snapshot, keeps the cursor where it is.
	if p := getChanges(t, ts, "/v1/cs2/changes?since="+url.QueryEscape(p.Meta.NextCursor)); len(p.Data) != 0 {
		t.Fatalf("the old edge lists %+v", p)
	}
}

// TestChangesCursorAcrossInstances: two instances on one Redis apply the
// same numbered feed, so a changes cursor minted on one continues on the
// other: a walk started on A and finished on B lists what a walk on A
// alone lists, and a later round is listed after B's cursor on A.
func TestChangesCursorAcrossInstances(t *testing.T) {
	rc := redistest.Client(t)
	a, b := newLiveServer(t, redisLive(rc)), newLiveServer(t, redisLive(rc))
	m, up := liveMatchOf(t, a)
	rs := rounds(replayEvents(t, up))
	pub := &live.RedisFeed{Client: rc}
	start := getChanges(t, a.testServer, "/v1/cs2/changes").Meta.NextCursor
	for _, r := range rs[:3] {
		publishAll(t, pub, r, a, b)
	}
	walk := func(cursor string, servers ...*liveServer) (string, []string) {
		var got []string
		for i := 0; ; i++ {
			ts := servers[min(i, len(servers)-1)].testServer
			p := getChanges(t, ts, "/v1/cs2/changes?limit=1&since="+url.QueryEscape(cursor))
			for _, e := range p.Data {
				got = append(got, e.EntityType+" "+e.EntityID)
			}
			cursor = p.Meta.NextCursor
			if !p.Meta.HasMore {
				return cursor, got
			}
		}
	}
	_, onA := walk(start, a)
	next, split := walk(start, a, b)
	want := fmt.Sprint([]string{"match " + m.ID.String(), "odds " + m.ID.String()})
	if fmt.Sprint(onA) != want || fmt.Sprint(split) != want {
		t.Fatalf("on A %v, started on A and finished on B %v; want %s", onA, split, want)
	}
	publishAll(t, pub, rs[3], a, b)
	if _, got := walk(next, a); len(got) == 0 || got[0] != "match "+m.ID.String() {
		t.Fatalf("a later round, after B's cursor, on A: %v", got)
	}
}

package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/live"
	"github.com/eodata/eo/push"
)

// TestPageCache: a list page asked a third time on the same view is
// served from the cache (same bytes, same ETag, counted as a hit; the
// second request stores it, the first only remembers its URI); another
// query is a miss; a live change makes a new view whose pages are assembled afresh,
// so the next request after the WebSocket update shows the change.
func TestPageCache(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	m, up := liveMatchOf(t, ls)
	hits := func() uint64 { return ls.metrics.pageCacheHits.Load() }
	misses := func() uint64 { return ls.metrics.pageCacheMisses.Load() }

	const list = "/v1/cs2/matches?status=scheduled&limit=200"
	h0, m0 := hits(), misses()
	a := ls.get(t, list)
	if pc := ls.pages.For(ls.View(), ls.View()); pc == nil || pc.Get([]byte(list), 0) != nil {
		t.Fatal("a page was stored the first time it was asked")
	}
	ls.get(t, list)
	b := ls.get(t, list)
	if a.status != 200 || !bytes.Equal(a.body, b.body) || a.header.Get("ETag") == "" || a.header.Get("ETag") != b.header.Get("ETag") {
		t.Fatalf("repeated page: %d, same body %v, ETag %q / %q", a.status, bytes.Equal(a.body, b.body), a.header.Get("ETag"), b.header.Get("ETag"))
	}
	if hits()-h0 != 1 || misses()-m0 != 2 {
		t.Fatalf("hits +%d misses +%d, want +1 +2", hits()-h0, misses()-m0)
	}
	if !bytes.Contains(a.body, []byte(m.ID.String())) {
		t.Fatalf("match %s not on the scheduled page", m.ID)
	}
	if r := ls.get(t, "/v1/cs2/matches?status=scheduled&limit=199"); r.status != 200 || misses()-m0 != 3 {
		t.Fatalf("another query: %d, misses +%d", r.status, misses()-m0)
	}
	// A match with and without its tournament: both cached (the first
	// until the tournament's next status change).
	for _, q := range []string{"?include=teams,tournament", "?include=teams"} {
		h1, m1 := hits(), misses()
		for range 3 {
			ls.get(t, "/v1/cs2/matches/"+m.ID.String()+q)
		}
		if hits() != h1+1 || misses() != m1+2 {
			t.Fatalf("match detail %s: hits +%d misses +%d, want +1 +2", q, hits()-h1, misses()-m1)
		}
	}

	// A live change: once the WebSocket update is out, REST shows it.
	c := ls.open(t)
	mt := "match:" + m.ID.String()
	c.send(map[string]string{"type": "subscribe", "target": mt})
	c.expect("subscribed", mt)
	c.expect("snapshot", mt)
	_ = ls.feed.Publish(context.Background(), live.Event{Kind: live.KindScore, MatchID: up, Status: "live",
		ScoreA: intp(0), ScoreB: intp(0), ChangedAt: fixtureNow.Add(time.Hour).UTC()})
	c.expect("update", mt)
	after := ls.get(t, list)
	if bytes.Contains(after.body, []byte(m.ID.String())) || after.header.Get("ETag") == a.header.Get("ETag") {
		t.Fatalf("the scheduled page still lists match %s after it went live (stale cache)", m.ID)
	}
	var page struct {
		Data []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ls.get(t, "/v1/cs2/matches?status=live&limit=200").body, &page); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range page.Data {
		found = found || r.ID == m.ID.String() && r.Status == "live"
	}
	if !found {
		t.Fatalf("match %s not on the live page after the update", m.ID)
	}
}

// TestPageCacheFollowsTheClock: the pages whose bytes depend on the clock
// (a tournament's status: the tournaments, a tournament, the bulk odds, a
// match with include=tournament) are cached, and at every instant read
// the same as a page built afresh: just before a tournament starts, at
// the instant it starts, after, and past the day it ends.
func TestPageCacheFollowsTheClock(t *testing.T) {
	ts := newTestServer(t)
	var tours struct {
		Data []struct {
			ID       string     `json:"id"`
			StartsAt *time.Time `json:"starts_at"`
			EndsAt   *time.Time `json:"ends_at"`
			Status   string     `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ts.get(t, "/v1/cs2/tournaments?status=upcoming&limit=200").body, &tours); err != nil {
		t.Fatal(err)
	}
	// The next tournament to start.
	var tour string
	var start, end time.Time
	for _, x := range tours.Data {
		if x.StartsAt != nil && x.EndsAt != nil && (tour == "" || x.StartsAt.Before(start)) {
			tour, start, end = x.ID, *x.StartsAt, *x.EndsAt
		}
	}
	if tour == "" {
		t.Fatal("the fixture has no upcoming tournament with dates")
	}
	if u, ok := ts.View().StableUntil(fixtureNow); !ok || !u.Equal(start) {
		t.Fatalf("StableUntil(now) = %v, %v; want the next start %v", u, ok, start)
	}
	var matches struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ts.get(t, "/v1/cs2/matches?tournament="+tour+"&limit=1").body, &matches); err != nil {
		t.Fatal(err)
	}
	uris := []string{"/v1/cs2/tournaments?limit=200", "/v1/cs2/tournaments/" + tour, "/v1/cs2/odds?limit=1000"}
	if len(matches.Data) > 0 {
		uris = append(uris, "/v1/cs2/matches/"+matches.Data[0].ID+"?include=tournament")
	}
	dayAfter := time.Date(end.Year(), end.Month(), end.Day()+1, 0, 0, 0, 0, time.UTC)
	hits0 := ts.metrics.pageCacheHits.Load()
	var before []byte
	for _, at := range []time.Time{fixtureNow, start.Add(-time.Nanosecond), start, start.Add(time.Hour),
		dayAfter.Add(-time.Nanosecond), dayAfter, dayAfter.Add(time.Minute)} {
		ts.now = at
		for _, uri := range uris {
			var got result
			for range 3 {
				got = ts.get(t, uri)
			}
			ts.noPageCache = true
			want := ts.get(t, uri)
			ts.noPageCache = false
			if got.status != 200 || !bytes.Equal(got.body, want.body) || got.header.Get("ETag") != want.header.Get("ETag") {
				t.Fatalf("%s at %v: the cached page differs from a fresh one (status %d)\n got %.300s\nwant %.300s",
					uri, at, got.status, got.body, want.body)
			}
			if uri == uris[1] {
				if at.Equal(start.Add(-time.Nanosecond)) {
					before = want.body
				} else if at.Equal(start) && bytes.Equal(before, want.body) {
					t.Fatalf("the tournament reads the same before and at its start: the test moves no edge")
				}
			}
		}
	}
	if ts.metrics.pageCacheHits.Load() == hits0 {
		t.Fatal("no clock-dependent page was served from the cache")
	}
}

// TestPageCacheKeepsWhatLiveLeaves: a batch of live changes makes a new
// view, and the new view's cache starts with the pages the batch cannot
// have changed: the snapshot's pages (teams, players, rankings,
// tournaments, closing lines) and those of a match the batch did not touch
// are served from the cache at once; the touched match's pages, the match
// lists, the open markets and head-to-head are built afresh. Every page,
// kept or not, reads the same as one built on the new view without the
// cache.
func TestPageCacheKeepsWhatLiveLeaves(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	m, up := liveMatchOf(t, ls)
	var other *Match
	for i := range ls.snap().Matches() {
		if x := &ls.snap().Matches()[i]; x.Status == "completed" && x.ID != m.ID {
			other = x
			break
		}
	}
	if other == nil {
		t.Fatal("the fixture has no completed match")
	}
	var players struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ls.get(t, "/v1/cs2/players?limit=1").body, &players); err != nil || len(players.Data) == 0 {
		t.Fatalf("no player: %v", err)
	}
	mid, oid, team, opp := m.ID.String(), other.ID.String(), m.TeamAID.String(), m.TeamBID.String()
	player, tour := players.Data[0].ID, m.TournamentID.String()
	kept := []string{ // scopeSnapshot, and scopeMatch of the untouched match
		"/v1/cs2/teams?limit=50", "/v1/cs2/teams/" + team, "/v1/cs2/teams/" + team + "/profile",
		"/v1/cs2/teams/" + team + "/roster-history", "/v1/cs2/players?limit=50", "/v1/cs2/players/" + player,
		"/v1/cs2/players/" + player + "/stats", "/v1/cs2/rankings?limit=50", "/v1/cs2/tournaments?limit=50",
		"/v1/cs2/tournaments/" + tour, "/v1/cs2/tournaments/" + tour + "/teams", "/v1/cs2/odds/closing?limit=50",
		"/v1/cs2/matches/" + oid, "/v1/cs2/matches/" + oid + "?include=teams,maps,stats,odds",
		"/v1/cs2/matches/" + oid + "/maps", "/v1/cs2/matches/" + oid + "/stats", "/v1/cs2/odds?match=" + oid,
	}
	rebuilt := []string{ // scopeView, and scopeMatch of the touched match
		"/v1/cs2/matches?limit=50", "/v1/cs2/matches?status=live&limit=50", "/v1/cs2/odds?limit=1000",
		"/v1/cs2/teams/" + team + "/head-to-head?opponent=" + opp,
		"/v1/cs2/matches/" + mid, "/v1/cs2/matches/" + mid + "?include=teams,maps,odds",
		"/v1/cs2/matches/" + mid + "/maps", "/v1/cs2/odds?match=" + mid,
	}
	before := map[string][]byte{}
	for _, uri := range append(append([]string{}, kept...), rebuilt...) {
		for range 2 { // stored the second time
			r := ls.get(t, uri)
			if r.status != 200 {
				t.Fatalf("%s: %d %s", uri, r.status, r.body)
			}
			before[uri] = r.body
		}
	}

	// The cache is direct-mapped: a URI whose slot a later one took is not
	// cached, and can't be kept.
	pc := ls.pages.For(ls.View(), ls.View())
	stored := map[string]bool{}
	for _, uri := range kept {
		// As the test client sends it.
		stored[uri] = pc.Get([]byte(uri), 0) != nil || pc.Get([]byte(strings.ReplaceAll(uri, ",", "%2C")), 0) != nil
	}
	n := 0
	for _, uri := range kept {
		if stored[uri] {
			n++
		}
	}
	if n < len(kept)/2 {
		t.Fatalf("only %d of %d pages to keep are in the cache before the batch", n, len(kept))
	}

	// A live batch of the match: a score, then prices (two books, so a
	// line is published).
	c := ls.open(t)
	mt, ot := "match:"+mid, "odds:"+mid
	for _, target := range []string{mt, ot} {
		c.send(map[string]string{"type": "subscribe", "target": target})
		c.expect("subscribed", target)
		c.expect("snapshot", target)
	}
	ctx := context.Background()
	at := fixtureNow.Add(time.Hour).UTC()
	_ = ls.feed.Publish(ctx, live.Event{Kind: live.KindScore, MatchID: up, Status: "live", ScoreA: intp(0), ScoreB: intp(0),
		LiveState: json.RawMessage(`{"map_number":1,"map_name":"de_nuke","round":2,"rounds_a":1,"rounds_b":0,"side_a":"ct"}`),
		ChangedAt: at})
	c.expect("update", mt)
	for _, p := range []struct {
		book, outcome string
		price         float64
	}{{"bk-01", "home", 1.60}, {"bk-01", "away", 2.40}, {"bk-02", "home", 1.55}, {"bk-02", "away", 2.50}} {
		_ = ls.feed.Publish(ctx, live.Event{Kind: live.KindPrice, MatchID: up, Book: p.book, Market: "match_winner",
			Outcome: p.outcome, Price: p.price, CapturedAt: at.Add(time.Second)})
	}
	for {
		u, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		if u.Type == "update" && u.Target == ot {
			break
		}
	}

	check := func(uri string, wantHit bool) []byte {
		t.Helper()
		h0 := ls.metrics.pageCacheHits.Load()
		got := ls.get(t, uri)
		hit := ls.metrics.pageCacheHits.Load() != h0
		ls.noPageCache = true
		want := ls.get(t, uri)
		ls.noPageCache = false
		if got.status != 200 || !bytes.Equal(got.body, want.body) || got.header.Get("ETag") != want.header.Get("ETag") {
			t.Fatalf("%s after the live batch: the served page differs from one built afresh (status %d)\n got %.300s\nwant %.300s",
				uri, got.status, got.body, want.body)
		}
		if hit != wantHit {
			t.Fatalf("%s after the live batch: served from the cache %v, want %v", uri, hit, wantHit)
		}
		return got.body
	}
	for _, uri := range kept {
		check(uri, stored[uri])
	}
	after := map[string][]byte{}
	for _, uri := range rebuilt {
		after[uri] = check(uri, false)
	}
	for _, uri := range []string{"/v1/cs2/matches/" + mid, "/v1/cs2/odds?match=" + mid, "/v1/cs2/odds?limit=1000"} {
		if bytes.Equal(before[uri], after[uri]) {
			t.Fatalf("%s reads the same before and after the live batch: the test changes nothing", uri)
		}
	}
}

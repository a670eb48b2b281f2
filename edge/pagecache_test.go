package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/eodata/eo/live"
	"github.com/zeebo/xxh3"
)

// TestPageCache: a list page asked a third time on the same view is
// served from the cache (same bytes, same ETag, counted as a hit; the
// second request stores it, the first only remembers its URI); another
// query is a miss; a live change makes a new view whose pages are assembled afresh,
// so the next request after the WebSocket update shows the change.
func TestPageCache(t *testing.T) {
	ls := newLiveServer(t, LiveOptions{})
	m, up := liveMatchOf(t, ls)
	hits := func() uint64 { return ls.metrics.pageCacheHits.Load() }
	misses := func() uint64 { return ls.metrics.pageCacheMisses.Load() }

	const list = "/v1/cs2/matches?status=scheduled&limit=200"
	h0, m0 := hits(), misses()
	a := ls.get(t, list)
	if pc := ls.pages.Load(); pc == nil || pc.slots[xxh3.HashString(list)%pageCacheSlots].Load() != nil {
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
	ls.feed.Publish(context.Background(), live.Event{Kind: live.KindScore, MatchID: up, Status: "live",
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

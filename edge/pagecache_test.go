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
// so the next request after the WebSocket update shows the change; pages
// of a clock-dependent route are not cached.
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
	// The bulk odds snapshot and a match with its tournament depend on
	// the clock: never cached. The match without it is.
	h1, m1 := hits(), misses()
	for range 3 {
		ls.get(t, "/v1/cs2/odds")
		ls.get(t, "/v1/cs2/matches/"+m.ID.String()+"?include=teams,tournament")
	}
	if hits() != h1 || misses() != m1 {
		t.Fatalf("a clock-dependent route went through the page cache")
	}
	for range 3 {
		ls.get(t, "/v1/cs2/matches/"+m.ID.String()+"?include=teams")
	}
	if hits() != h1+1 || misses() != m1+2 {
		t.Fatalf("match detail: hits +%d misses +%d, want +1 +2", hits()-h1, misses()-m1)
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

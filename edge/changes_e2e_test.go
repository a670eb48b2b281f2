package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/push"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// mirror is a client's local copy of the matches (each as GET
// /matches/{id} serves it) and their odds (every line of /odds?match=,
// all pages), kept in sync through the changes feed.
type mirror struct {
	ts      *testServer
	cursor  string
	limit   int
	matches map[string]json.RawMessage
	odds    map[string][]json.RawMessage
	// seen counts the entries applied, by "source entity_type kind".
	seen map[string]int
	ids  map[string][]string // entity ids by "entity_type kind"
}

type changesPage struct {
	Data []struct {
		EntityType string `json:"entity_type"`
		EntityID   string `json:"entity_id"`
		Kind       string `json:"kind"`
		ChangedAt  string `json:"changed_at"`
		Source     string `json:"source"`
		Href       string `json:"href"`
	} `json:"data"`
	Meta struct {
		Count      int    `json:"count"`
		NextCursor string `json:"next_cursor"`
		HasMore    bool   `json:"has_more"`
	} `json:"meta"`
}

func getChanges(t *testing.T, ts *testServer, path string) changesPage {
	t.Helper()
	r := ts.get(t, path)
	if r.status != 200 {
		t.Fatalf("%s: %d %s", path, r.status, r.body)
	}
	var p changesPage
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Meta.Count != len(p.Data) || p.Meta.NextCursor == "" {
		t.Fatalf("%s: meta %+v for %d entries", path, p.Meta, len(p.Data))
	}
	return p
}

// newMirror takes a cursor for now, then downloads everything (the
// protocol: what changes during the download is announced after the
// cursor).
func newMirror(t *testing.T, ts *testServer, limit int) *mirror {
	t.Helper()
	p := getChanges(t, ts, "/v1/cs2/changes")
	if len(p.Data) != 0 || p.Meta.HasMore {
		t.Fatalf("a first call lists nothing: %+v", p)
	}
	m := &mirror{ts: ts, cursor: p.Meta.NextCursor, limit: limit, seen: map[string]int{}, ids: map[string][]string{}}
	m.matches, m.odds = fullDownload(t, ts)
	return m
}

// fullDownload is every match (the list, then each one's detail) and each
// match's odds.
func fullDownload(t *testing.T, ts *testServer) (map[string]json.RawMessage, map[string][]json.RawMessage) {
	t.Helper()
	matches, odds := map[string]json.RawMessage{}, map[string][]json.RawMessage{}
	for _, id := range pageAll(t, ts, "/v1/cs2/matches?limit=200") {
		matches[id] = matchDetail(t, ts, id)
		if rows := oddsOf(t, ts, id); len(rows) > 0 {
			odds[id] = rows
		}
	}
	return matches, odds
}

// walkRaw walks a list's pages and returns its rows as served.
func walkRaw(t *testing.T, ts *testServer, path string) []string {
	t.Helper()
	var out []string
	cursor := ""
	for {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		r := ts.get(t, p)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
		var page struct {
			Data []json.RawMessage `json:"data"`
			Meta struct {
				NextCursor *string `json:"next_cursor"`
			} `json:"meta"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, row := range page.Data {
			out = append(out, string(row))
		}
		if page.Meta.NextCursor == nil {
			return out
		}
		cursor = *page.Meta.NextCursor
	}
}

func matchDetail(t *testing.T, ts *testServer, id string) json.RawMessage {
	t.Helper()
	r := ts.get(t, "/v1/cs2/matches/"+id)
	if r.status != 200 {
		t.Fatalf("match %s: %d %s", id, r.status, r.body)
	}
	var d struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.body, &d); err != nil {
		t.Fatal(err)
	}
	return d.Data
}

func oddsOf(t *testing.T, ts *testServer, id string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, row := range walkRaw(t, ts, "/v1/cs2/odds?match="+id+"&limit=1000") {
		out = append(out, json.RawMessage(row))
	}
	return out
}

// sync follows the feed until it is up to date, fetching what each entry
// names (or dropping it), and returns the entries applied.
func (m *mirror) sync(t *testing.T) int {
	t.Helper()
	n := 0
	for {
		p := getChanges(t, m.ts, fmt.Sprintf("/v1/cs2/changes?since=%s&limit=%d", url.QueryEscape(m.cursor), m.limit))
		if len(p.Data) > m.limit || p.Meta.HasMore && len(p.Data) != m.limit {
			t.Fatalf("a page of %d entries (limit %d), has_more %v", len(p.Data), m.limit, p.Meta.HasMore)
		}
		for _, e := range p.Data {
			m.seen[e.Source+" "+e.EntityType+" "+e.Kind]++
			m.ids[e.EntityType+" "+e.Kind] = append(m.ids[e.EntityType+" "+e.Kind], e.EntityID)
			if _, err := time.Parse(time.RFC3339Nano, e.ChangedAt); err != nil {
				t.Fatalf("changed_at %q", e.ChangedAt)
			}
			switch e.EntityType {
			case "match":
				if e.Href != "/v1/cs2/matches/"+e.EntityID {
					t.Fatalf("href %s", e.Href)
				}
				if e.Kind == "deleted" {
					delete(m.matches, e.EntityID)
				} else {
					m.matches[e.EntityID] = matchDetail(t, m.ts, e.EntityID)
				}
			case "odds":
				if e.Href != "/v1/cs2/odds?match="+e.EntityID {
					t.Fatalf("href %s", e.Href)
				}
				rows := oddsOf(t, m.ts, e.EntityID)
				if e.Kind == "deleted" || len(rows) == 0 {
					delete(m.odds, e.EntityID)
				} else {
					m.odds[e.EntityID] = rows
				}
			}
		}
		n += len(p.Data)
		m.cursor = p.Meta.NextCursor
		if !p.Meta.HasMore {
			return n
		}
	}
}

// equal reports how the mirror differs from a fresh full download ("" when
// it does not).
func (m *mirror) diff(t *testing.T) string {
	t.Helper()
	matches, odds := fullDownload(t, m.ts)
	var out []string
	for id, d := range matches {
		if !bytes.Equal(d, m.matches[id]) {
			out = append(out, fmt.Sprintf("match %s:\n  mirror   %s\n  download %s", id, m.matches[id], d))
		}
	}
	for id := range m.matches {
		if _, ok := matches[id]; !ok {
			out = append(out, "match "+id+" is in the mirror only")
		}
	}
	for id, rows := range odds {
		if !slices.EqualFunc(rows, m.odds[id], func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			out = append(out, fmt.Sprintf("odds of %s: the mirror has %d lines, the download %d", id, len(m.odds[id]), len(rows)))
		}
	}
	for id := range m.odds {
		if _, ok := odds[id]; !ok {
			out = append(out, "odds of "+id+" are in the mirror only")
		}
	}
	slices.Sort(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("... %d differences", len(out)))
	}
	return strings.Join(out, "\n")
}

// fixtureLine is the line of a raw entity file of the fixture store whose
// "id" is id, decoded.
func fixtureLine(t *testing.T, st store.Store, entity raw.Entity, id string) map[string]any {
	t.Helper()
	ctx := context.Background()
	objs, err := st.List(ctx, raw.BatchesPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, "/"+string(entity)+".ndjson") {
			continue
		}
		b, err := store.GetBytes(ctx, st, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["id"] == id {
				return m
			}
		}
	}
	t.Fatalf("no %s %s in the fixture store", entity, id)
	return nil
}

func jsonLine(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestChangesFeedKeepsAMirrorInSync keeps a local mirror of the matches
// and their odds in sync through GET /changes alone, across a match played
// out by the live replay (every batch of events applied by the tracker,
// the mirror synced after each) and two snapshot swaps (the events landed
// and run through the real pipeline, the first with a team renamed and a
// match added, the second with that match removed again): after each swap
// and at the end the mirror equals a fresh full download.
func TestChangesFeedKeepsAMirrorInSync(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	ts := ls.testServer
	ctx := context.Background()
	m, up := liveMatchOf(t, ls)
	id := m.ID.String()

	batches := replayRounds(t, up, 11)
	if len(batches) < 15 {
		t.Fatalf("the replay produced %d batches", len(batches))
	}

	mir := newMirror(t, ts, 7)
	if d := mir.diff(t); d != "" {
		t.Fatalf("the first download differs from the second:\n%s", d)
	}

	// The raw lines the swaps land besides the events: the match's first
	// team renamed, and a new match (landed apart, so it can be removed).
	match := fixtureLine(t, ls.store, raw.Matches, up)
	team := fixtureLine(t, ls.store, raw.Teams, match["team_a_id"].(string))
	team["name"] = team["name"].(string) + " Reborn"
	team["changed_at"] = fixtureNow.Add(90 * time.Minute).Format(time.RFC3339)
	newMatch := match
	newMatch["id"] = "e2e-added-match"
	newMatch["scheduled_at"] = fixtureNow.Add(72 * time.Hour).Format(time.RFC3339)
	newMatch["changed_at"] = fixtureNow.Add(90 * time.Minute).Format(time.RFC3339)

	var landed []live.Event
	swap := func(when string, extra func()) {
		t.Helper()
		if _, err := live.LandEvents(ctx, ls.store, t.TempDir(), "live", landed, fixtureNow.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		landed = nil
		if extra != nil {
			extra()
		}
		before := ls.Current().ID
		if _, err := publishOnce(ctx, ls.store, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		if err := ls.Load(ctx); err != nil || ls.Current().ID == before {
			t.Fatalf("no swap %s: %v", when, err)
		}
		if n := mir.sync(t); n == 0 {
			t.Fatalf("the swap %s announced nothing", when)
		}
		if d := mir.diff(t); d != "" {
			t.Fatalf("after the swap %s the mirror differs from a full download:\n%s", when, d)
		}
	}
	var added string
	swapped := false
	for i, b := range batches {
		ls.Push().Tracker().Apply(b)
		landed = append(landed, b...)
		mir.sync(t)
		// The live match, as the mirror holds it, is what REST serves.
		if got := matchDetail(t, ts, id); !bytes.Equal(got, mir.matches[id]) {
			t.Fatalf("after batch %d: the mirror's match\n%s\nREST\n%s", i+1, mir.matches[id], got)
		}
		if got := oddsOf(t, ts, id); !slices.EqualFunc(got, mir.odds[id], func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("after batch %d: the mirror has %d odds lines of the match, REST %d", i+1, len(mir.odds[id]), len(got))
		}
		if !swapped && b[0].ScoreA != nil && *b[0].ScoreA+*b[0].ScoreB == 1 {
			swapped = true
			swap("mid-series", func() {
				worldtest.LandDir(t, ls.store, t.TempDir(), fixtureNow.Add(2*time.Hour), map[raw.Entity][]string{
					raw.Teams: {jsonLine(t, team)}})
				added = worldtest.LandDir(t, ls.store, t.TempDir(), fixtureNow.Add(2*time.Hour), map[raw.Entity][]string{
					raw.Matches: {jsonLine(t, newMatch)}})
			})
		}
	}
	if !swapped {
		t.Fatal("the replay never finished a map")
	}
	swap("after the series", func() {
		// The added match's batch removed: the match is gone.
		objs, err := ls.store.List(ctx, raw.BatchesPrefix+added+"/")
		if err != nil || len(objs) == 0 {
			t.Fatalf("the added match's batch: %v %v", objs, err)
		}
		for _, o := range objs {
			if err := ls.store.Delete(ctx, o.Key); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Logf("entries applied: %v", mir.seen)
	if mir.seen["snapshot team updated"] == 0 {
		t.Fatalf("the rename was not announced: %v", mir.seen)
	}
	if mir.seen["live match updated"] == 0 || mir.seen["live odds updated"] == 0 ||
		mir.seen["snapshot match updated"] == 0 || mir.seen["snapshot match created"] != 1 || mir.seen["snapshot match deleted"] != 1 {
		t.Fatalf("entries applied: %v", mir.seen)
	}
	if c, d := mir.ids["match created"], mir.ids["match deleted"]; c[0] != d[0] {
		t.Fatalf("created %v, deleted %v", c, d)
	}
}

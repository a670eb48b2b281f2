package edge

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// pageRows walks every page of a list and returns its rows.
func pageRows(t testing.TB, ts *testServer, path string) []map[string]any {
	return pageRowsFrom(t, ts, path, "")
}

// pageRowsFrom walks the pages of a list from a cursor ("" = the first
// page) and returns their rows.
func pageRowsFrom(t testing.TB, ts *testServer, path, next string) []map[string]any {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var out []map[string]any
	for range 10000 {
		p := path
		if next != "" {
			p += sep + "cursor=" + url.QueryEscape(next)
		}
		r := ts.get(t, p)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
		for _, row := range r.data(t) {
			out = append(out, row.(map[string]any))
		}
		nc, _ := r.json(t)["meta"].(map[string]any)["next_cursor"].(string)
		if nc == "" {
			return out
		}
		next = nc
	}
	t.Fatal("too many pages")
	return nil
}

// /odds/closing holds the closing line of every series of the completed
// matches, each once, matches newest first and contiguous, whatever the
// page size; its filters equal the unfiltered walk filtered by hand.
func TestClosingOdds(t *testing.T) {
	ts := newTestServer(t)
	whole := pageRows(t, ts, "/v1/cs2/odds/closing?limit=1000")
	if len(whole) < 20 {
		t.Fatalf("only %d closing lines in the fixture", len(whole))
	}
	// Every closing line of every completed match, from the per-match
	// histories.
	want := map[string]bool{}
	matches := map[string]map[string]any{}
	for _, m := range pageRows(t, ts, "/v1/cs2/matches?limit=200&status=completed") {
		matches[m["id"].(string)] = m
		for _, l := range pageRows(t, ts, "/v1/cs2/odds?limit=1000&match="+m["id"].(string)) {
			if l["is_closing"] == true {
				want[l["id"].(string)] = true
			}
		}
	}
	series := map[string]bool{}
	done := map[string]bool{} // matches whose run of rows has ended
	prev := ""
	for _, l := range whole {
		id, mid := l["id"].(string), l["match_id"].(string)
		if !want[id] {
			t.Errorf("line %s is not a closing line of a completed match", id)
		}
		delete(want, id)
		k := fmt.Sprint(l["market_id"], l["outcome_key"], l["line"], l["source"])
		if series[k] {
			t.Errorf("series %s has two closing lines", k)
		}
		series[k] = true
		if mid != prev {
			if done[mid] {
				t.Errorf("match %s's lines are not contiguous", mid)
			}
			if prev != "" {
				done[prev] = true
				if a, b := matches[prev]["scheduled_at"].(string), matches[mid]["scheduled_at"].(string); a < b {
					t.Errorf("match %s (%s) after %s (%s): want newest first", mid, b, prev, a)
				}
			}
			prev = mid
		}
	}
	if len(want) > 0 {
		t.Errorf("%d closing lines of completed matches are missing", len(want))
	}
	ids := func(rows []map[string]any) string {
		var b strings.Builder
		for _, r := range rows {
			b.WriteString(r["id"].(string) + " ")
		}
		return b.String()
	}
	// Small pages end inside matches; the walk is the same rows in order.
	for _, n := range []int{1, 7, 50} {
		if got := pageRows(t, ts, fmt.Sprintf("/v1/cs2/odds/closing?limit=%d", n)); ids(got) != ids(whole) {
			t.Errorf("limit=%d: the paged walk (%d rows) differs from the whole list (%d)", n, len(got), len(whole))
		}
	}
	m0 := matches[whole[0]["match_id"].(string)]
	team, tour := m0["team_a_id"].(string), m0["tournament_id"].(string)
	m1 := whole[len(whole)-1]["match_id"].(string)
	day := m0["scheduled_at"].(string)[:10]
	for _, tc := range []struct {
		query string
		keep  func(l, m map[string]any) bool
	}{
		{"market=map_winner", func(l, _ map[string]any) bool { return l["market"] == "map_winner" }},
		{"market=match_winner,total_maps", func(l, _ map[string]any) bool {
			return l["market"] == "match_winner" || l["market"] == "total_maps"
		}},
		{"source=eo_market", func(l, _ map[string]any) bool { return l["source"] == "eo_market" }},
		{"team=" + team, func(_, m map[string]any) bool { return m["team_a_id"] == team || m["team_b_id"] == team }},
		{"tournament=" + tour, func(_, m map[string]any) bool { return m["tournament_id"] == tour }},
		{"date_from=" + day + "&date_to=" + day, func(_, m map[string]any) bool {
			return strings.HasPrefix(m["scheduled_at"].(string), day)
		}},
		{"match=" + m0["id"].(string), func(_, m map[string]any) bool { return m["id"] == m0["id"] }},
		{"match=" + m1 + "," + m0["id"].(string), func(_, m map[string]any) bool { return m["id"] == m0["id"] || m["id"] == m1 }},
		{"match=" + m1 + "&market=match_winner", func(l, m map[string]any) bool { return m["id"] == m1 && l["market"] == "match_winner" }},
		{"match=" + team, func(_, _ map[string]any) bool { return false }}, // well-formed, no such match
	} {
		var hand []map[string]any
		for _, l := range whole {
			if tc.keep(l, matches[l["match_id"].(string)]) {
				hand = append(hand, l)
			}
		}
		got := pageRows(t, ts, "/v1/cs2/odds/closing?limit=9&"+tc.query)
		if ids(got) != ids(hand) {
			t.Errorf("%s: %d rows, the whole list filtered by hand %d", tc.query, len(got), len(hand))
		}
	}
	for _, q := range []string{"source=bookmaker", "team=nope", "date_from=2025-02-30", "match=nope", "match=" + m1 + ",",
		"match=" + strings.ToUpper(m1), "market=nothing", "market=match_winner,Map_winner"} {
		if r := ts.get(t, "/v1/cs2/odds/closing?"+q); r.status != 400 || r.code(t) != "invalid_parameter" {
			t.Errorf("%s: %d %s, want 400 invalid_parameter", q, r.status, r.body)
		}
	}
	if r := ts.get(t, "/v1/cs2/odds/closing?cursor=garbage"); r.status != 400 || r.code(t) != "invalid_cursor" {
		t.Errorf("a malformed cursor: %d %s", r.status, r.body)
	}
}

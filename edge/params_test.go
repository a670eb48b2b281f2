package edge

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A mistake in a query gets 400 invalid_parameter naming what the endpoint
// accepts, never 200 with unfiltered data; what the spec makes lenient
// stays lenient.
func TestStrictParameters(t *testing.T) {
	ts := newTestServer(t)
	m := ts.get(t, "/v1/cs2/matches?limit=1").data(t)[0].(map[string]any)
	refused := []struct{ path, says string }{
		{"/v1/cs2/matches?name=navi", `unknown parameter "name"; this endpoint accepts status, tournament, team, date_from, date_to, has, limit, cursor (and apiKey)`},
		{"/v1/cs2/matches?search=navi", `unknown parameter "search"`},
		{"/v1/cs2/matches?q=navi", `unknown parameter "q"`},
		{"/v1/cs2/matches?page=2", `unknown parameter "page"`},
		{"/v1/cs2/matches?per_page=2", `unknown parameter "per_page"`},
		{"/v1/cs2/matches?sort=scheduled_at", `unknown parameter "sort"`},
		{"/v1/cs2/tournaments?sort=name", `unknown parameter "sort"`},
		{"/v1/cs2/odds?market=map_winner", `unknown parameter "market"; this endpoint accepts match, source, limit, cursor`},
		{"/v1/cs2/odds?is_closing=true", `unknown parameter "is_closing"`},
		{"/v1/cs2/matches/" + m["id"].(string) + "/maps?limit=5", `unknown parameter "limit"; this endpoint accepts none besides apiKey`},
		{"/v1/cs2/coverage?x=1", `unknown parameter "x"`},
		{"/v1/cs2/odds?match=", `parameter "match" is empty`},
		{"/v1/cs2/matches?team=", `parameter "team" is empty`},
		{"/v1/cs2/matches/" + m["id"].(string) + "?include=", `parameter "include" is empty`},
		{"/v1/cs2/matches?date_from=", `parameter "date_from" is empty`},
		{"/v1/cs2/matches?cursor=", `parameter "cursor" is empty`},
		{"/v1/cs2/matches?status=live&status=completed", `parameter "status" is given more than once`},
		{"/v1/cs2/matches?status=live,", `status has an empty item`},
		{"/v1/cs2/matches?team=" + m["team_a_id"].(string) + ",nope", `team must be canonical lowercase UUIDs`},
		{"/v1/cs2/matches?" + strings.Repeat("limit=1&", maxQueryParams+1), "too many query parameters"},
	}
	for _, tc := range refused {
		r := ts.get(t, tc.path)
		if r.status != 400 || r.code(t) != "invalid_parameter" || !strings.Contains(string(r.body), jsonText(tc.says)) {
			t.Errorf("%s: %d %s, want 400 invalid_parameter saying %s", tc.path, r.status, r.body, tc.says)
		}
	}
	accepted := []string{
		"/v1/cs2/matches?limit=",          // the spec: a nonsensical limit is the default
		"/v1/cs2/matches?limit=abc",       //
		"/v1/cs2/odds?cursor=",            // the bulk snapshot ignores cursor
		"/v1/cs2/odds?cursor=whatever",    //
		"/v1/cs2/teams?apiKey=" + goodKey, // the key's fallback, everywhere
		"/v1/cs2/matches?status=cancelled&tournament=00000000-0000-7000-8000-000000000000", // no row: []
		"/v1/cs2/rankings?type=team&limit=3",                                               //
	}
	for _, p := range accepted {
		if r := ts.get(t, p); r.status != 200 {
			t.Errorf("%s: %d %s, want 200", p, r.status, r.body)
		}
	}
}

func jsonText(s string) string { return strings.ReplaceAll(s, `"`, `\"`) }

// A comma-separated filter on an enumeration or an id matches any of its
// values: the rows are the union of the single-value lists, in list order.
func TestSetFilters(t *testing.T) {
	ts := newTestServer(t)
	all := pageAll(t, ts, "/v1/cs2/matches?limit=200")
	ids := func(path string) []string { return pageAll(t, ts, path) }
	union := func(paths ...string) []string {
		in := map[string]bool{}
		for _, p := range paths {
			for _, id := range ids(p) {
				in[id] = true
			}
		}
		var out []string
		for _, id := range all { // the list order
			if in[id] {
				out = append(out, id)
			}
		}
		return out
	}
	rows := ts.get(t, "/v1/cs2/matches?limit=50").data(t)
	a := rows[0].(map[string]any)["team_a_id"].(string)
	var b string
	for _, r := range rows {
		if x := r.(map[string]any)["team_a_id"].(string); x != a {
			b = x
			break
		}
	}
	for _, tc := range []struct {
		set  string
		each []string
	}{
		{"/v1/cs2/matches?limit=7&status=completed,scheduled", []string{"/v1/cs2/matches?limit=200&status=completed", "/v1/cs2/matches?limit=200&status=scheduled"}},
		{"/v1/cs2/matches?limit=3&team=" + a + "," + b, []string{"/v1/cs2/matches?limit=200&team=" + a, "/v1/cs2/matches?limit=200&team=" + b}},
		{"/v1/cs2/teams?limit=4&region=Europe,CIS", []string{"/v1/cs2/teams?limit=200&region=Europe", "/v1/cs2/teams?limit=200&region=CIS"}},
	} {
		got, want := ids(tc.set), union(tc.each...)
		if strings.HasPrefix(tc.set, "/v1/cs2/teams") {
			want = ids(tc.each[0])
			want = append(want, ids(tc.each[1])...)
			slices.Sort(want)
			got = slices.Clone(got)
			slices.Sort(got)
		}
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %d rows, want the union of %v: %d rows", tc.set, len(got), tc.each, len(want))
		}
	}
	st := ts.get(t, "/v1/cs2/tournaments?limit=200&status=finished,ongoing").data(t)
	for _, r := range st {
		if s := r.(map[string]any)["status"]; s != "finished" && s != "ongoing" {
			t.Errorf("status=finished,ongoing returned a tournament %v", s)
		}
	}
	if len(st) == 0 {
		t.Error("status=finished,ongoing returned no tournament")
	}
}

// A value outside a filter's enumeration is a 400 whose message lists the
// accepted values; it used to be 200 data: [] (a typo, or a value in
// another case, looked like "no such rows"). Every enumerated filter of
// every route.
func TestUnknownEnumerationValueIsRefused(t *testing.T) {
	ts := newTestServer(t)
	for _, c := range []struct{ path, accepted string }{
		{"/v1/cs2/matches?status=postponed", "scheduled, live, completed, cancelled"},
		{"/v1/cs2/matches?status=completed,Live", "scheduled, live, completed, cancelled"},
		{"/v1/cs2/teams?region=Mars", "Europe, North America, South America, Asia, CIS, Oceania, Africa"},
		{"/v1/cs2/teams?region=europe", "Europe, North America"},
		{"/v1/cs2/players?role=Sniper", "AWP, IGL, Lurker, Rifler, Support"},
		{"/v1/cs2/tournaments?tier=Z", "S, A, B, C"},
		{"/v1/cs2/tournaments?region=EU", "Europe, North America"},
		{"/v1/cs2/tournaments?status=soon", "upcoming, ongoing, finished"},
		{"/v1/cs2/rankings?region=Mars", "Europe, North America"},
		{"/v1/cs2/rankings?type=player&role=Coach", "AWP, IGL, Lurker, Rifler, Support"},
		{"/v1/cs2/rankings?type=coach", "team or player"},
		{"/v1/cs2/odds/closing?market=moneyline", "match_winner, total_maps, map_handicap, map_winner, outright"},
		{"/v1/cs2/odds/closing?source=bookmaker", "eo_market, eo_model"},
		{"/v1/cs2/odds?source=bookmaker", "eo_market or eo_model"},
	} {
		r := ts.get(t, c.path)
		if r.status != 400 || r.code(t) != "invalid_parameter" || !strings.Contains(string(r.body), c.accepted) {
			t.Errorf("%s: %d %s, want 400 invalid_parameter naming %s", c.path, r.status, r.body, c.accepted)
		}
	}
	// Accepted values that match nothing, or a source not served yet, stay 200.
	for _, p := range []string{"/v1/cs2/odds/closing?market=outright", "/v1/cs2/odds?source=eo_model",
		"/v1/cs2/matches?status=live&tournament=00000000-0000-7000-8000-000000000000"} {
		if r := ts.get(t, p); r.status != 200 || len(r.data(t)) != 0 {
			t.Errorf("%s: %d %s, want 200 with no rows", p, r.status, r.body)
		}
	}
}

// A limit above the endpoint's maximum is clamped (the spec's rule) and
// the response says so, also when the page comes from the page cache.
func TestLimitClampedHeader(t *testing.T) {
	ts := newTestServer(t)
	for range 3 { // the second request stores the page, the third is a cache hit
		r := ts.get(t, "/v1/cs2/matches?limit=100000")
		if got := r.header.Get(HeaderLimitClamped); got != fmt.Sprint(routeLimits["/matches"].max) {
			t.Errorf("limit=100000: %s %q, want %d", HeaderLimitClamped, got, routeLimits["/matches"].max)
		}
		if n := len(r.data(t)); n > routeLimits["/matches"].max {
			t.Errorf("limit=100000 gave %d rows", n)
		}
	}
	// A clamped page small enough for the cache: its hit skips the
	// parameter check, and still says the limit was clamped.
	const small = "/v1/cs2/matches?status=live&limit=100000"
	h0 := ts.metrics.pageCacheHits.Load()
	for range 3 {
		if got := ts.get(t, small).header.Get(HeaderLimitClamped); got != fmt.Sprint(routeLimits["/matches"].max) {
			t.Errorf("%s: %s %q, want %d", small, HeaderLimitClamped, got, routeLimits["/matches"].max)
		}
	}
	if ts.metrics.pageCacheHits.Load() == h0 {
		t.Errorf("%s was never served from the page cache", small)
	}
	for _, p := range []string{"/v1/cs2/matches?limit=200", "/v1/cs2/matches?limit=5", "/v1/cs2/matches"} {
		if got := ts.get(t, p).header.Get(HeaderLimitClamped); got != "" {
			t.Errorf("%s: %s %q, want none", p, HeaderLimitClamped, got)
		}
	}
	// Past what an int holds: clamped, not the default page.
	for _, big := range []string{"9223372036854775808", "99999999999999999999"} {
		r := ts.get(t, "/v1/cs2/teams?limit="+big)
		if got := r.header.Get(HeaderLimitClamped); got != fmt.Sprint(routeLimits["/teams"].max) || len(r.data(t)) <= routeLimits["/teams"].def {
			t.Errorf("teams limit=%s: %s %q and %d rows, want %d and more than the default %d", big, HeaderLimitClamped,
				got, len(r.data(t)), routeLimits["/teams"].max, routeLimits["/teams"].def)
		}
	}
	if got := ts.get(t, "/v1/cs2/odds?limit=5000").header.Get(HeaderLimitClamped); got != fmt.Sprint(routeLimits["/odds"].max) {
		t.Errorf("odds limit=5000: %s %q", HeaderLimitClamped, got)
	}
}

// The parameters each route accepts are the ones its operation documents.
func TestRouteParamsMatchContract(t *testing.T) {
	ops := documentedOps(oapiModel(t))
	for path, accepted := range routeParams {
		method := "GET"
		if path == "/ws-token" {
			method = "POST"
		}
		key := method + " /v1/{game}" + fiberParam.ReplaceAllString(path, "{$1}")
		op := ops[key]
		if op == nil {
			t.Errorf("routeParams has %s, the contract has no %s", path, key)
			continue
		}
		var documented []string
		for _, p := range op.Parameters {
			if p.In == "query" {
				documented = append(documented, p.Name)
			}
		}
		if !slices.Equal(documented, accepted) {
			t.Errorf("%s: the route accepts %v, the contract documents %v", key, accepted, documented)
		}
	}
	for key := range ops {
		if strings.HasPrefix(key, "GET /v1/{game}/") || strings.HasPrefix(key, "POST /v1/{game}/") {
			path := strings.SplitN(key, " /v1/{game}", 2)[1]
			if _, ok := routeParams[regexp.MustCompile(`\{([a-z]+)\}`).ReplaceAllString(path, ":$1")]; !ok {
				t.Errorf("%s is documented but has no routeParams entry", key)
			}
		}
	}
}

// A cursor continues the list it was minted for: reused under another
// filter set (a filter added, removed or changed) it is 400 invalid_cursor,
// on every paginated list and for every filter the list takes. Before, a
// cursor of status=completed reused with status=scheduled answered 200
// data: [] (the position of one list applied to another). The order of the
// parameters, of a list's items, the page size and the key's form do not
// change the list.
func TestCursorBoundToItsFilters(t *testing.T) {
	ts := newTestServer(t)
	first := func(path string) map[string]any {
		t.Helper()
		d := ts.get(t, path).data(t)
		if len(d) == 0 {
			t.Fatalf("%s: no rows", path)
		}
		return d[0].(map[string]any)
	}
	m := first("/v1/cs2/matches?status=completed&limit=1")
	om := first("/v1/cs2/odds/closing?limit=1")["match_id"].(string)
	other := m["team_b_id"].(string) // well-formed, another match id than om
	if m["id"] != om {
		other = m["id"].(string)
	}
	p := first("/v1/cs2/players?limit=1")
	top := first("/v1/cs2/rankings?limit=1")["entity_id"].(string) // a team with a rating history of several days
	// A value each filter accepts, for the lists' every filter.
	sample := map[string]string{
		"status": "scheduled", "tournament": m["tournament_id"].(string), "team": m["team_a_id"].(string),
		"date_from": "2020-01-01", "date_to": "2030-12-31", "has": "maps", "slug": p["slug"].(string),
		"region": "Europe", "role": "AWP", "ids": p["id"].(string), "tier": "S", "year": "2026",
		"match": other, "source": "eo_market", "market": "match_winner",
	}
	// Each paginated list, with a query whose first page has a next one.
	lists := map[string]string{
		"/matches":      "/v1/cs2/matches?limit=1",
		"/teams":        "/v1/cs2/teams?limit=1",
		"/players":      "/v1/cs2/players?limit=1",
		"/tournaments":  "/v1/cs2/tournaments?limit=1",
		"/odds":         "/v1/cs2/odds?limit=1&match=" + om,
		"/odds/closing": "/v1/cs2/odds/closing?limit=1",
		// no filter: the path's team is bound (TestRatingHistoryEndpoint)
		"/teams/:id/ratings": "/v1/cs2/teams/" + top + "/ratings?limit=1",
	}
	for route, accepted := range routeParams {
		if !slices.Contains(accepted, "cursor") {
			continue
		}
		base, ok := lists[route]
		if !ok {
			t.Errorf("paginated route %s is not checked here", route)
			continue
		}
		r := ts.get(t, base)
		next, _ := r.json(t)["meta"].(map[string]any)["next_cursor"].(string)
		if r.status != 200 || next == "" {
			t.Fatalf("%s: %d, no next page", base, r.status)
		}
		cur := "&cursor=" + url.QueryEscape(next)
		for _, name := range accepted {
			if name == "cursor" || name == "limit" || name == "sort" {
				continue
			}
			v, ok := sample[name]
			if !ok {
				t.Errorf("%s: no sample value for filter %s", route, name)
				continue
			}
			q := base + "&" + name + "=" + url.QueryEscape(v)
			if strings.Contains(base, name+"=") { // changed, not added
				q = strings.Replace(base, name+"="+om, name+"="+v, 1)
			}
			if r := ts.get(t, q+cur); r.status != 400 || r.code(t) != "invalid_cursor" {
				t.Errorf("%s: a cursor minted without %s=%s: %d %s, want 400 invalid_cursor", route, name, v, r.status, r.body)
			}
		}
		// The same list: a larger page, the key as apiKey.
		if r := ts.get(t, strings.Replace(base, "limit=1", "limit=3", 1)+cur+"&apiKey="+goodKey, "-"); r.status != 200 {
			t.Errorf("%s: the cursor under the same filters: %d %s", route, r.status, r.body)
		}
	}

	// The case, and a filter taken away.
	r := ts.get(t, "/v1/cs2/matches?status=completed&limit=2")
	next := "&cursor=" + url.QueryEscape(r.json(t)["meta"].(map[string]any)["next_cursor"].(string))
	for _, q := range []string{"status=scheduled", "status=completed,scheduled", "", "status=completed&has=maps"} {
		if r := ts.get(t, "/v1/cs2/matches?limit=2&"+q+next); r.status != 400 || r.code(t) != "invalid_cursor" {
			t.Errorf("a status=completed cursor under %q: %d %s, want 400 invalid_cursor", q, r.status, r.body)
		}
	}
	// The same filters in another order, or a list's items reordered.
	r = ts.get(t, "/v1/cs2/matches?status=completed,cancelled&date_from=2020-01-01&limit=2")
	next = "&cursor=" + url.QueryEscape(r.json(t)["meta"].(map[string]any)["next_cursor"].(string))
	want := ts.get(t, "/v1/cs2/matches?status=completed,cancelled&date_from=2020-01-01&limit=2"+next)
	if want.status != 200 || len(want.data(t)) == 0 {
		t.Fatalf("the next page: %d %s", want.status, want.body)
	}
	if r := ts.get(t, "/v1/cs2/matches?limit=2&date_from=2020-01-01&status=cancelled,completed"+next); r.status != 200 ||
		string(r.body) != string(want.body) {
		t.Errorf("the same filters reordered: %d %s", r.status, r.body)
	}
}

package edge

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// The fixture world (160 matches) is too small for the model gate: these
// tests check the closed-gate behaviour, the boards and roster history as
// the pipeline computed them. The open gate is tested in pipelines/ and model/.

func TestRankingsTeamBoard(t *testing.T) {
	ts := newTestServer(t)
	rows := ts.get(t, "/v1/cs2/rankings").data(t)
	if len(rows) == 0 {
		t.Fatal("empty team board")
	}
	regions := map[string]int{}
	for i, x := range rows {
		r := x.(map[string]any)
		if r["entity_type"] != "team" || r["metric"] != "glicko2_conservative" || r["window"] != "3mo" {
			t.Fatalf("row %d: %v", i, r)
		}
		if int(r["rank"].(float64)) != i+1 {
			t.Fatalf("default order is rank: row %d has rank %v", i, r["rank"])
		}
		if r["rd"] == nil || r["role"] != nil || r["team_id"] != nil {
			t.Fatalf("team row with rd null, or a role or team_id: %v", r)
		}
		v, rating, rd := r["value"].(float64), r["rating"].(float64), r["rd"].(float64)
		if d := v - (rating - 2*rd); d > 0.011 || d < -0.011 {
			t.Fatalf("value %v != rating - 2 rd (%v, %v)", v, rating, rd)
		}
		if i > 0 && v > rows[i-1].(map[string]any)["value"].(float64) {
			t.Fatal("board not ordered by value")
		}
		if r["matches"].(float64) < 1 {
			t.Fatalf("ranked team without a match in the window: %v", r)
		}
		regions[r["region"].(string)]++
		// own_rank on the team resource agrees.
		team := ts.get(t, "/v1/cs2/teams/"+r["entity_id"].(string)).json(t)["data"].(map[string]any)
		if team["own_rank"] == nil || team["own_rank"].(float64) != r["rank"].(float64) || team["slug"] != r["slug"] {
			t.Fatalf("team %v own_rank %v, board rank %v", team["slug"], team["own_rank"], r["rank"])
		}
	}
	// limit truncates; region filters exactly.
	if n := len(ts.get(t, "/v1/cs2/rankings?limit=3").data(t)); n != min(3, len(rows)) {
		t.Errorf("limit=3 gave %d rows", n)
	}
	var region string
	for k, n := range regions {
		if n > 0 && n < len(rows) && (region == "" || k < region) {
			region = k
		}
	}
	if region != "" {
		got := ts.get(t, "/v1/cs2/rankings?region="+strings.ReplaceAll(region, " ", "%20")).data(t)
		if len(got) != regions[region] {
			t.Errorf("region=%s: %d rows, want %d", region, len(got), regions[region])
		}
		for _, x := range got {
			if x.(map[string]any)["region"] != region {
				t.Errorf("region filter let through %v", x)
			}
		}
	}
	if r := ts.get(t, "/v1/cs2/rankings?region=Mars"); r.status != 400 || r.code(t) != "invalid_parameter" {
		t.Errorf("unknown region: %d %s, want 400 invalid_parameter", r.status, r.body)
	}
	// sort keys, both directions, nulls never first.
	for _, key := range []string{"value", "rating", "rd", "matches", "rank"} {
		for _, dir := range []string{"", "-"} {
			got := ts.get(t, "/v1/cs2/rankings?sort="+dir+key).data(t)
			if len(got) != len(rows) {
				t.Fatalf("sort=%s%s: %d rows", dir, key, len(got))
			}
			for i := 1; i < len(got); i++ {
				a, b := got[i-1].(map[string]any)[key].(float64), got[i].(map[string]any)[key].(float64)
				if (dir == "" && a > b) || (dir == "-" && a < b) {
					t.Fatalf("sort=%s%s out of order at %d: %v then %v", dir, key, i, a, b)
				}
			}
		}
	}
	if r := ts.get(t, "/v1/cs2/rankings?sort=name"); r.status != 400 {
		t.Errorf("sort=name: %d", r.status)
	}
	if r := ts.get(t, "/v1/cs2/rankings?type=team&role=AWP"); r.status != 200 || len(r.data(t)) != 0 {
		t.Errorf("role filter on the team board must match nothing: %s", r.body)
	}
	if m := ts.get(t, "/v1/cs2/rankings?limit=2").json(t)["meta"].(map[string]any); m["next_cursor"] != nil || m["count"].(float64) != 2 {
		t.Errorf("meta %v", m)
	}
}

func TestRosterHistoryEndpoint(t *testing.T) {
	ts := newTestServer(t)
	snap := ts.snap()
	// The team with the most roster rows.
	best, n := "", 0
	for _, tm := range snap.Teams() {
		if a := ts.View().RosterHistory(tm.ID); a.N > n || (a.N == n && tm.ID.String() < best) {
			best, n = tm.ID.String(), a.N
		}
	}
	if n < 2 {
		t.Fatalf("fixture has no team with two roster rows (best %d)", n)
	}
	rows := ts.get(t, "/v1/cs2/teams/"+best+"/roster-history").data(t)
	if len(rows) != n {
		t.Fatalf("rows %d, want %d", len(rows), n)
	}
	prevAt := ""
	for i, x := range rows {
		r := x.(map[string]any)
		ids := r["player_ids"].([]any)
		if len(ids) != 5 {
			t.Fatalf("row %d fields %d players", i, len(ids))
		}
		at := r["played_at"].(string)
		if prevAt != "" && at > prevAt {
			t.Fatal("roster history not newest first")
		}
		prevAt = at
		in, out := r["players_in"].([]any), r["players_out"].([]any)
		if int(r["changed_count"].(float64)) != len(in) || len(in) != len(out) {
			t.Fatalf("row %d: changed_count %v, in %v, out %v", i, r["changed_count"], in, out)
		}
		if i == len(rows)-1 {
			continue
		}
		// players_in / players_out against the next (older) row.
		older := map[string]bool{}
		for _, p := range rows[i+1].(map[string]any)["player_ids"].([]any) {
			older[p.(string)] = true
		}
		var wantIn []string
		for _, p := range ids {
			if !older[p.(string)] {
				wantIn = append(wantIn, p.(string))
			}
		}
		sort.Strings(wantIn)
		var gotIn []string
		for _, p := range in {
			gotIn = append(gotIn, p.(string))
		}
		if strings.Join(gotIn, ",") != strings.Join(wantIn, ",") {
			t.Fatalf("row %d players_in %v, want %v", i, gotIn, wantIn)
		}
		if r["days_since_prev"] == nil || r["continuity"] == "new" {
			t.Fatalf("row %d lacks a previous match: %v", i, r)
		}
	}
	// Slug addressing works, unknown team is 404, a team without history is [].
	slug := snap.Team(mustID(t, best)).Slug
	if got := ts.get(t, "/v1/cs2/teams/"+slug+"/roster-history").data(t); len(got) != n {
		t.Errorf("by slug: %d rows", len(got))
	}
	if r := ts.get(t, "/v1/cs2/teams/00000000-0000-7000-8000-000000000000/roster-history"); r.status != 404 {
		t.Errorf("unknown team: %d", r.status)
	}
}

func mustID(t *testing.T, s string) ID {
	t.Helper()
	id, ok := ParseID(s)
	if !ok {
		t.Fatalf("bad id %q", s)
	}
	return id
}

func TestModelMetricsClosedGate(t *testing.T) {
	ts := newTestServer(t)
	r := ts.get(t, "/v1/cs2/model/metrics")
	env := r.json(t)
	rows := r.data(t)
	if len(rows) != 1 || env["meta"].(map[string]any)["next_cursor"] != nil {
		t.Fatalf("metrics: %s", r.body)
	}
	m := rows[0].(map[string]any)
	for _, k := range []string{"market", "brier", "brier_ci_low", "brier_ci_high", "log_loss", "accuracy", "brier_skill_score",
		"settled_matches", "model_version", "gate_passed", "min_settled_matches", "evaluated_at"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metrics lack %s", k)
		}
	}
	settled := m["settled_matches"].(float64)
	if m["market"] != "match_winner" || m["gate_passed"] != false || m["min_settled_matches"].(float64) != 500 || settled < 50 || settled >= 500 {
		t.Fatalf("fixture metrics: %v", m)
	}
	if d := m["brier_skill_score"].(float64) - (1 - m["brier"].(float64)/0.25); d > 1e-5 || d < -1e-5 {
		t.Errorf("brier_skill_score %v vs brier %v", m["brier_skill_score"], m["brier"])
	}
	if !(m["brier_ci_low"].(float64) <= m["brier"].(float64) && m["brier"].(float64) <= m["brier_ci_high"].(float64)) {
		t.Errorf("interval does not contain the estimate: %v", m)
	}
	// Closed gate: no eo_model lines anywhere, coverage says pending.
	if n := len(ts.get(t, "/v1/cs2/odds?source=eo_model&limit=1000").data(t)); n != 0 {
		t.Errorf("eo_model rows with the gate closed: %d", n)
	}
	for _, x := range ts.get(t, "/v1/cs2/odds?limit=1000").data(t) {
		if x.(map[string]any)["source"] == "eo_model" {
			t.Fatal("eo_model row in the odds snapshot with the gate closed")
		}
	}
	for _, x := range ts.get(t, "/v1/cs2/coverage").data(t) {
		e := x.(map[string]any)
		if e["key"] == "eo_model" && e["status"] != "pending_validation" {
			t.Errorf("coverage eo_model %v with the gate closed", e["status"])
		}
	}
	if ts.snap().ModelGatePassed() {
		t.Error("ModelGatePassed true on the fixture")
	}
}

// TestRatingHistoryEndpoint: /teams/{id}/ratings pages a team's rating
// history newest first (a cursor bound to its team); the newest row of a
// team that played in the period open at the as-of time is its ranking
// row; /rankings?include=rating_history carries each team's first page of
// 30 rows, so a page drawing the board's sparklines needs one request.
func TestRatingHistoryEndpoint(t *testing.T) {
	ts := newTestServer(t)
	board := ts.get(t, "/v1/cs2/rankings").data(t)
	asOf := ts.get(t, "/v1/cs2/model/metrics").data(t)[0].(map[string]any)["evaluated_at"].(string)
	matched, paged := 0, 0
	for _, x := range board {
		r := x.(map[string]any)
		id := r["entity_id"].(string)
		all := ts.get(t, "/v1/cs2/teams/"+id+"/ratings?limit=1000").data(t)
		if len(all) == 0 {
			t.Fatalf("ranked team %s has no rating history", id)
		}
		prev := ""
		for i, y := range all {
			h := y.(map[string]any)
			start := h["period_start"].(string)
			if prev != "" && start >= prev {
				t.Fatalf("team %s row %d: period %s after %s: not newest first", id, i, start, prev)
			}
			prev = start
			if d := h["value"].(float64) - (h["rating"].(float64) - 2*h["rd"].(float64)); d > 0.011 || d < -0.011 {
				t.Fatalf("team %s row %d: value %v is not rating − 2 rd", id, i, h)
			}
			if h["rank"] == nil || h["volatility"].(float64) <= 0 || h["as_of"].(string) <= start {
				t.Fatalf("team %s row %d: %v", id, i, h)
			}
		}
		if newest := all[0].(map[string]any); newest["as_of"] == asOf {
			matched++
			for _, k := range []string{"rating", "rd", "value", "rank"} {
				if newest[k] != r[k] {
					t.Errorf("team %s at the as-of time: rating history %s %v, rankings %v", id, k, newest[k], r[k])
				}
			}
		}
		// Paged by two, the same rows; the cursor is bound to the team.
		var got []any
		next := ""
		for {
			page := ts.get(t, "/v1/cs2/teams/"+r["slug"].(string)+"/ratings?limit=2"+next)
			got = append(got, page.data(t)...)
			c := page.json(t)["meta"].(map[string]any)["next_cursor"]
			if c == nil {
				break
			}
			next = "&cursor=" + c.(string)
			paged++
			other := board[0].(map[string]any)["entity_id"].(string)
			if other == id {
				other = board[1].(map[string]any)["entity_id"].(string)
			}
			if bad := ts.get(t, "/v1/cs2/teams/"+other+"/ratings?limit=2"+next); bad.status != 400 || bad.code(t) != "invalid_cursor" {
				t.Fatalf("team %s's cursor on team %s: %d %s, want 400 invalid_cursor", id, other, bad.status, bad.body)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("team %s: pages of 2 give %d rows, one page %d", id, len(got), len(all))
		}
		// What the board carries.
		inc := ts.get(t, "/v1/cs2/teams/"+id+"/ratings?limit=30").data(t)
		withHist := ts.get(t, "/v1/cs2/rankings?include=rating_history&limit=500").data(t)
		for _, z := range withHist {
			w := z.(map[string]any)
			if w["entity_id"] == id && fmt.Sprint(w["rating_history"]) != fmt.Sprint(inc) {
				t.Fatalf("team %s: the board's rating_history %v, the first page of 30 %v", id, w["rating_history"], inc)
			}
		}
	}
	if matched == 0 || paged == 0 {
		t.Fatalf("%d teams played at the as-of time, %d cursors followed: the fixture tests nothing", matched, paged)
	}
	for path, code := range map[string]string{
		"/v1/cs2/teams/00000000-0000-7000-8000-000000000000/ratings":                        "not_found",
		"/v1/cs2/teams/no-such-team/ratings":                                                "not_found",
		"/v1/cs2/rankings?type=player&include=rating_history":                               "invalid_parameter",
		"/v1/cs2/rankings?include=roster":                                                   "invalid_parameter",
		"/v1/cs2/teams/" + board[0].(map[string]any)["slug"].(string) + "/ratings?cursor=x": "invalid_cursor",
	} {
		r := ts.get(t, path)
		if want := map[string]int{"not_found": 404}[code]; r.code(t) != code || (want != 0 && r.status != want) {
			t.Errorf("%s: %d %s, want %s", path, r.status, r.body, code)
		}
	}
}

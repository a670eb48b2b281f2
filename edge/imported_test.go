package edge

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/importer"
	"github.com/eodata/eo/snapshot"
	"github.com/eodata/eo/store"
)

// Imported real data (eo import) lacks values the synthetic feed always has:
// tournament tier and region, team region, stat-line assists. The edge must
// serve them as null (not "" or 0), and a null must match no filter.

// importerExcerpt is an importer test excerpt (importer/testdata, sources
// named in its README.md).
var importerExcerpt = map[string]string{
	"csgo2015": "csgo2015_results.csv",
	"cs2-2024": "cs2-2024",
	"cs2-2026": "cs2-2026_results.json", // HLTV results.json: no tiers, regions or assists
}

// importedServer lands the excerpt of source into st, runs the pipeline and
// serves the snapshot at now.
func importedServer(t *testing.T, st *store.Local, source string, now time.Time) *testServer {
	t.Helper()
	ctx := context.Background()
	ds, err := importer.Read(source, filepath.Join("..", "importer", "testdata", importerExcerpt[source]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := importer.Land(ctx, st, ds, t.TempDir(), now); err != nil {
		t.Fatal(err)
	}
	if _, err := publishOnce(ctx, st, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	ts := &testServer{store: st, now: now}
	srv, err := New(Options{Snapshots: snapshot.Options{Store: st, CacheDir: t.TempDir()}, Auth: &testAuth{keys: map[string]access.Principal{
		goodKey: {KeyID: "k1", AccountID: "a1", Plan: "standard", Display: "eo_live_…0001"},
	}}, CursorSecret: []byte("test-secret"), Now: func() time.Time { return ts.now }, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ts.Server = srv
	return ts
}

// rowsByID maps each row's id to the row.
func rowsByID(t *testing.T, rows []any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, x := range rows {
		m := x.(map[string]any)
		out[m["id"].(string)] = m
	}
	return out
}

// isNull reports whether the row has key with a JSON null (present, not
// omitted).
func isNull(row map[string]any, key string) bool {
	v, ok := row[key]
	return ok && v == nil
}

// TestImportedNullsServedAsNull: the synthetic fixture plus the cs2-2026
// excerpt in one snapshot. Imported tournaments and teams serve tier/region
// null, are matched by no tier/region filter (while synthetic rows still
// are), sort last by region; imported stat lines serve assists null with a
// rating computed without them.
func TestImportedNullsServedAsNull(t *testing.T) {
	ts := importedServer(t, fixtureStore(t), "cs2-2026", fixtureNow)

	// Tournaments: the imported ones have tier and region null.
	all := rowsByID(t, ts.get(t, "/v1/cs2/tournaments?limit=200").data(t))
	var nullTier []string
	for id, r := range all {
		if isNull(r, "tier") {
			if !isNull(r, "region") {
				t.Errorf("tournament %s: tier null but region %v", id, r["region"])
			}
			nullTier = append(nullTier, id)
		}
	}
	if len(nullTier) == 0 || len(nullTier) == len(all) {
		t.Fatalf("want imported (null tier) and synthetic tournaments, have %d of %d", len(nullTier), len(all))
	}
	one := ts.get(t, "/v1/cs2/tournaments/"+nullTier[0])
	if !strings.Contains(string(one.body), `"tier":null`) || !strings.Contains(string(one.body), `"region":null`) {
		t.Errorf("imported tournament: %s", one.body)
	}
	matched := 0 // synthetic tournaments matched by some tier filter
	if r := ts.get(t, "/v1/cs2/tournaments?limit=200&tier="); r.status != 400 {
		t.Errorf("an empty tier filter: %d %s, want 400 (strict parameters)", r.status, r.body)
	}
	for _, tier := range []string{"S", "A", "B", "C"} {
		got := rowsByID(t, ts.get(t, "/v1/cs2/tournaments?limit=200&tier="+tier).data(t))
		want := 0
		for _, r := range all {
			if r["tier"] == tier {
				want++
			}
		}
		if len(got) != want {
			t.Errorf("tier=%s: %d rows, want %d", tier, len(got), want)
		}
		matched += len(got)
		for _, id := range nullTier {
			if _, ok := got[id]; ok {
				t.Errorf("tier=%s matched tournament %s whose tier is null", tier, id)
			}
		}
	}
	if matched != len(all)-len(nullTier) {
		t.Errorf("tier filters matched %d tournaments, want every synthetic one (%d)", matched, len(all)-len(nullTier))
	}
	for _, region := range []string{"Europe", "North America", "South America", "Asia", "CIS", "Oceania", "Africa"} {
		for id, r := range rowsByID(t, ts.get(t, "/v1/cs2/tournaments?limit=200&region="+url.QueryEscape(region)).data(t)) {
			if r["region"] != region {
				t.Errorf("region=%s matched tournament %s with region %v", region, id, r["region"])
			}
		}
	}

	// Teams: imported teams have region null, match no region filter and
	// sort last by region in both directions.
	teams := ts.get(t, "/v1/cs2/teams?limit=200&sort=region").data(t)
	nullRegion := map[string]bool{}
	for _, x := range teams {
		if r := x.(map[string]any); isNull(r, "region") {
			nullRegion[r["id"].(string)] = true
		}
	}
	if len(nullRegion) == 0 || len(nullRegion) == len(teams) {
		t.Fatalf("want imported (null region) and synthetic teams, have %d of %d", len(nullRegion), len(teams))
	}
	for _, spec := range []string{"region", "-region"} {
		rows := ts.get(t, "/v1/cs2/teams?limit=200&sort="+spec).data(t)
		for i, x := range rows {
			if null := isNull(x.(map[string]any), "region"); null != (i >= len(rows)-len(nullRegion)) {
				t.Errorf("sort=%s: row %d (null region %v) out of place: nulls must come last", spec, i, null)
			}
		}
	}
	europe := ts.get(t, "/v1/cs2/teams?limit=200&region=Europe").data(t)
	if len(europe) == 0 {
		t.Error("region=Europe matched no synthetic team")
	}
	for _, x := range europe {
		if r := x.(map[string]any); r["region"] != "Europe" {
			t.Errorf("region=Europe matched team %v with region %v", r["id"], r["region"])
		}
	}

	// Stat lines of the imported matches: assists null, rating present and
	// computed with a neutral assists component.
	var lines []map[string]any
	for _, tid := range nullTier {
		for _, m := range ts.get(t, "/v1/cs2/matches?limit=200&tournament="+tid).data(t) {
			for _, x := range ts.get(t, "/v1/cs2/matches/"+m.(map[string]any)["id"].(string)+"/stats").data(t) {
				lines = append(lines, x.(map[string]any))
			}
		}
	}
	if len(lines) == 0 {
		t.Fatal("no imported stat lines")
	}
	found := false
	for _, l := range lines {
		if !isNull(l, "assists") {
			t.Fatalf("imported stat line with assists %v: %v", l["assists"], l)
		}
		if _, ok := l["rating"].(float64); !ok {
			t.Fatalf("imported stat line without a rating: %v", l)
		}
		// sml on Inferno (2389752): 24-13, ADR 117.3, KAST 0.9, 20 rounds; no
		// assists, multi-kills or opening duels (neutral 1.00 each).
		if l["kills"] == 24.0 && l["deaths"] == 13.0 && l["adr"] == 117.3 {
			found = true
			want := 0.30*(24.0/20)/0.67 + 0.15*(1-13.0/20)/0.33 + 0.25*117.3/75 + 0.05*1 + 0.10*0.9/0.79 + 0.10*1 + 0.05*1
			if got := l["rating"].(float64); fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", want) {
				t.Errorf("sml map 1 rating %v, want %.2f (assists neutral, not 0)", got, want)
			}
		}
	}
	if !found {
		t.Error("sml's Inferno line not found")
	}
	// The player's summary: assists null (no map reports them), kills summed.
	sum := ts.get(t, "/v1/cs2/players/"+lines[0]["player_id"].(string)+"/stats").json(t)["data"].(map[string]any)
	if !isNull(sum, "assists") || sum["kills"].(float64) <= 0 {
		t.Errorf("imported player summary: assists %v kills %v", sum["assists"], sum["kills"])
	}

	// Every resource of the imported data conforms to the contract (ts.get
	// validates each response against openapi.yaml).
	players, teamIDs := map[string]bool{}, map[string]bool{}
	for _, tid := range nullTier {
		ts.get(t, "/v1/cs2/tournaments/"+tid+"/teams")
		for _, x := range ts.get(t, "/v1/cs2/matches?limit=200&tournament="+tid).data(t) {
			m := x.(map[string]any)
			id := m["id"].(string)
			teamIDs[m["team_a_id"].(string)], teamIDs[m["team_b_id"].(string)] = true, true
			ts.get(t, "/v1/cs2/matches/"+id)
			for _, sub := range []string{"maps", "vetoes", "rounds", "depth", "lineups", "history", "streams"} {
				ts.get(t, "/v1/cs2/matches/"+id+"/"+sub)
			}
			ts.get(t, "/v1/cs2/odds?match="+id)
			if a, b := m["team_a_id"].(string), m["team_b_id"].(string); a != b {
				ts.get(t, "/v1/cs2/teams/"+a+"/head-to-head?opponent="+b)
			}
		}
	}
	for id := range teamIDs {
		if !nullRegion[id] {
			t.Errorf("imported team %s has a region", id)
		}
		for _, sub := range []string{"", "/profile", "/roster-history"} {
			ts.get(t, "/v1/cs2/teams/"+id+sub)
		}
	}
	for _, l := range lines {
		players[l["player_id"].(string)] = true
	}
	for id := range players {
		ts.get(t, "/v1/cs2/players/"+id)
		ts.get(t, "/v1/cs2/players/"+id+"/stats")
	}
	ts.get(t, "/v1/cs2/players?limit=200&sort=country_code")
	ts.get(t, "/v1/cs2/coverage")

	// Synthetic stat lines keep their assists.
	imported := map[string]bool{}
	for _, id := range nullTier {
		imported[id] = true
	}
	synthLines := 0
	for _, x := range ts.get(t, "/v1/cs2/matches?limit=20&has=stats").data(t) {
		m := x.(map[string]any)
		if imported[m["tournament_id"].(string)] {
			continue
		}
		for _, y := range ts.get(t, "/v1/cs2/matches/"+m["id"].(string)+"/stats").data(t) {
			synthLines++
			if _, ok := y.(map[string]any)["assists"].(float64); !ok {
				t.Fatalf("synthetic stat line without assists: %v", y)
			}
		}
	}
	if synthLines == 0 {
		t.Error("no synthetic stat lines checked")
	}
}

// TestImportedRankingRegionNull: on the imported excerpt alone the team
// board ranks the imported teams with region null; a region filter matches
// none of them.
func TestImportedRankingRegionNull(t *testing.T) {
	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := importedServer(t, st, "cs2-2026", time.Date(2026, 2, 5, 12, 0, 0, 0, time.UTC))
	rows := ts.get(t, "/v1/cs2/rankings").data(t)
	if len(rows) == 0 {
		t.Fatal("empty team board")
	}
	for _, x := range rows {
		if r := x.(map[string]any); !isNull(r, "region") {
			t.Errorf("imported team %v ranked with region %v", r["name"], r["region"])
		}
	}
	if got := ts.get(t, "/v1/cs2/rankings?region=Europe").data(t); len(got) != 0 {
		t.Errorf("region=Europe matched %d teams whose region is null", len(got))
	}
}

// TestImportedDatasetsConform serves each importer excerpt alone and checks
// every list and every resource of it against the contract (ts.get
// validates each response against openapi.yaml): the imported nulls must all
// be declared.
func TestImportedDatasetsConform(t *testing.T) {
	for _, source := range []string{"csgo2015", "cs2-2024", "cs2-2026"} {
		t.Run(source, func(t *testing.T) {
			st, err := store.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ts := importedServer(t, st, source, fixtureNow)
			for _, p := range []string{"/v1/cs2/rankings", "/v1/cs2/coverage", "/v1/cs2/model/metrics", "/v1/cs2/odds"} {
				ts.get(t, p)
			}
			tours := ts.get(t, "/v1/cs2/tournaments?limit=200").data(t)
			if len(tours) == 0 {
				t.Fatal("no tournaments")
			}
			for _, x := range tours {
				r := x.(map[string]any)
				if !isNull(r, "tier") || !isNull(r, "region") {
					t.Errorf("imported tournament %v: tier %v region %v, want null", r["name"], r["tier"], r["region"])
				}
				ts.get(t, "/v1/cs2/tournaments/"+r["id"].(string))
				ts.get(t, "/v1/cs2/tournaments/"+r["id"].(string)+"/teams")
			}
			teams := ts.get(t, "/v1/cs2/teams?limit=200").data(t)
			for _, x := range teams {
				r := x.(map[string]any)
				if !isNull(r, "region") {
					t.Errorf("imported team %v: region %v, want null", r["name"], r["region"])
				}
				for _, sub := range []string{"", "/profile", "/roster-history", "/ratings"} {
					ts.get(t, "/v1/cs2/teams/"+r["id"].(string)+sub)
				}
			}
			matches := ts.get(t, "/v1/cs2/matches?limit=200").data(t)
			if len(matches) == 0 {
				t.Fatal("no matches")
			}
			for _, x := range matches {
				m := x.(map[string]any)
				id := m["id"].(string)
				ts.get(t, "/v1/cs2/matches/"+id)
				for _, sub := range []string{"maps", "stats", "vetoes", "rounds", "depth", "lineups", "history", "streams"} {
					ts.get(t, "/v1/cs2/matches/"+id+"/"+sub)
				}
				ts.get(t, "/v1/cs2/teams/"+m["team_a_id"].(string)+"/head-to-head?opponent="+m["team_b_id"].(string))
			}
			for _, x := range ts.get(t, "/v1/cs2/players?limit=200").data(t) {
				id := x.(map[string]any)["id"].(string)
				ts.get(t, "/v1/cs2/players/"+id)
				ts.get(t, "/v1/cs2/players/"+id+"/stats")
			}
		})
	}
}

// TestImportedTimesEstimated: the synthetic fixture plus the cs2-2024
// excerpt in one snapshot. The imported matches, whose datasets have no
// start or end times, say times_estimated and end no sooner than their
// maps could be played; their result_known_at (the model's time) is the
// end of their UTC day, or their end when later. The synthetic ones, with
// real times, are not estimates and their results are known when they end.
func TestImportedTimesEstimated(t *testing.T) {
	ts := importedServer(t, fixtureStore(t), "cs2-2024", fixtureNow)
	estimated, real := 0, 0
	next := ""
	for {
		page := ts.get(t, "/v1/cs2/matches?status=completed&limit=200"+next)
		for _, x := range page.data(t) {
			m := x.(map[string]any)
			detail := ts.get(t, "/v1/cs2/matches/"+m["id"].(string)).json(t)["data"].(map[string]any)
			for _, k := range []string{"started_at", "ended_at", "result_known_at", "times_estimated"} {
				if detail[k] != m[k] {
					t.Fatalf("match %s: %s %v in the list, %v in the detail", m["id"], k, m[k], detail[k])
				}
			}
			at := func(k string) time.Time {
				v, err := time.Parse(time.RFC3339, m[k].(string))
				if err != nil {
					t.Fatalf("match %s %s: %v", m["id"], k, err)
				}
				return v
			}
			start, end, known := at("started_at"), at("ended_at"), at("result_known_at")
			if m["times_estimated"] != true {
				real++
				if !known.Equal(end) {
					t.Errorf("synthetic match %s: result known %s, ended %s", m["id"], known, end)
				}
				continue
			}
			estimated++
			maps := len(ts.get(t, "/v1/cs2/matches/"+m["id"].(string)+"/maps").data(t))
			played := int(m["score_a"].(float64) + m["score_b"].(float64))
			y, mo, d := at("scheduled_at").Date()
			day := time.Date(y, mo, d, 23, 59, 59, 0, time.UTC)
			if !start.Equal(at("scheduled_at")) || end.Sub(start) < time.Duration(max(maps, played))*20*time.Minute ||
				!known.Equal(day) && !known.Equal(end) || known.Before(end) || known.Before(day) {
				t.Errorf("imported match %s (%d maps): started %s, ended %s, result known %s", m["id"], max(maps, played), start, end, known)
			}
		}
		c := page.json(t)["meta"].(map[string]any)["next_cursor"]
		if c == nil {
			break
		}
		next = "&cursor=" + url.QueryEscape(c.(string))
	}
	if estimated != 7 || real == 0 {
		t.Fatalf("%d estimated (want the excerpt's 7) and %d real completed matches", estimated, real)
	}
}

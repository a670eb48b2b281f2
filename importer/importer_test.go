package importer

import (
	"context"
	"database/sql"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/edge"
	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/jobs"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/snapshot"
	"github.com/eodata/eo/store"
)

var quiet = slog.New(slog.DiscardHandler)

type noAuth struct{}

func (noAuth) Authenticate(context.Context, string) (access.Principal, error) {
	return access.Principal{}, access.ErrInvalidKey
}

// landAndLoad lands the dataset in a temp store, runs the real pipeline and
// publish, checks the edge can load the snapshot, and returns a DuckDB
// connection with one view per published table.
func landAndLoad(t *testing.T, ds *Dataset) (*sql.DB, pipelines.Report) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.NewLocal(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	if _, err := Land(ctx, st, ds, dir, now); err != nil {
		t.Fatal(err)
	}
	r := jobs.NewRunner(jobs.Options{Pipeline: pipelines.Options{Store: st, WorkDir: filepath.Join(dir, "work"), Logger: quiet},
		Force: true, Now: func() time.Time { return now }})
	res, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// eo serve's loader reads the published snapshot
	srv, err := edge.New(edge.Options{Snapshots: snapshot.Options{Store: st, CacheDir: filepath.Join(dir, "cache")}, Auth: noAuth{},
		CursorSecret: []byte("x"), Now: func() time.Time { return now }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Load(ctx); err != nil {
		t.Fatalf("edge cannot load the snapshot: %v", err)
	}
	if srv.Current() == nil || srv.Current().ID != res.Manifest.SnapshotID {
		t.Fatalf("edge loaded %v, want %s", srv.Current(), res.Manifest.SnapshotID)
	}
	return worldtest.OpenTables(t, res.Report.Tables), res.Report
}

func one[T any](t *testing.T, db *sql.DB, q string, args ...any) T {
	t.Helper()
	var v T
	if err := db.QueryRow(q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

func noQuarantine(t *testing.T, rep pipelines.Report) {
	t.Helper()
	if n := rep.QuarantinedTotal(); n != 0 {
		t.Fatalf("%d quarantined lines: %v", n, rep.Quarantined)
	}
}

// countCheck is a count(*) query of the snapshot and the count it must
// give; what names the rows counted.
type countCheck struct {
	what, q string
	want    int
}

func wantCounts(t *testing.T, db *sql.DB, checks ...countCheck) {
	t.Helper()
	for _, c := range checks {
		if n := one[int](t, db, c.q); n != c.want {
			t.Errorf("%s: %d, want %d", c.what, n, c.want)
		}
	}
}

func TestCSGO2015(t *testing.T) {
	ds, err := ReadCSGO2015("testdata/csgo2015_results.csv")
	if err != nil {
		t.Fatal(err)
	}
	// 13 matches in the excerpt; the 1-1 best-of-two draw is not landed
	if len(ds.Matches) != 12 || ds.Skipped["drawn match (best-of-two 1-1 or a tied single map): the contract has no draw"] != 1 {
		t.Fatalf("matches %d, skipped %v", len(ds.Matches), ds.Skipped)
	}
	db, rep := landAndLoad(t, ds)
	noQuarantine(t, rep)
	wantCounts(t, db,
		countCheck{"completed matches", `SELECT count(*) FROM matches WHERE status = 'completed'`, 12},
		countCheck{"map results", `SELECT count(*) FROM map_results`, 19},
		countCheck{"teams", `SELECT count(*) FROM teams`, 22},
		// the all-Default match is a forfeit
		countCheck{"forfeits", `SELECT count(*) FROM matches WHERE result_type = 'forfeit'`, 1},
	)
	// formats inferred: bo1 (round score in map_wins), bo3, bo5
	if s := one[string](t, db, `SELECT string_agg(DISTINCT format, ',' ORDER BY format) FROM matches`); s != "bo1,bo3,bo5" {
		t.Errorf("formats %q", s)
	}
	// Cobblestone → de_cbble; MR15 halves: first halves sum to 15
	if n := one[int](t, db, `SELECT count(*) FROM map_results WHERE map_name = 'de_cbble'`); n == 0 {
		t.Error("no de_cbble map")
	}
	if n := one[int](t, db, `SELECT count(*) FROM map_results WHERE first_half_a + first_half_b <> 15`); n != 0 {
		t.Errorf("%d maps with a first half not of 15 rounds", n)
	}
	// a known match: 2340454 Recon 5 0-2 TeamOne, Dust2 0-16, Inferno 13-16 on 2020-03-18
	if s := one[string](t, db, `SELECT concat_ws('|', m.score_a, m.score_b, m.format, strftime(m.scheduled_at AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M'),
	    ta.name, tb.name, w.name) FROM matches m JOIN teams ta ON ta.id = m.team_a_id JOIN teams tb ON tb.id = m.team_b_id
	    JOIN teams w ON w.id = m.winner_team_id WHERE ta.name = 'Recon 5' AND tb.name = 'TeamOne'`); s != "0|2|bo3|2020-03-18 00:00|Recon 5|TeamOne|TeamOne" {
		t.Errorf("match 2340454: %s", s)
	}
	wantCounts(t, db,
		// unknown fields stay null: tier, region
		countCheck{"tournaments with an invented tier/region", `SELECT count(*) FROM tournaments WHERE tier IS NOT NULL OR region IS NOT NULL`, 0},
		countCheck{"teams with a region or without the HLTV rank", `SELECT count(*) FROM teams WHERE region IS NOT NULL OR external_rank IS NULL`, 0},
	)
	// games for the harness carry the ranks
	for _, g := range ds.Games {
		if g.RankA <= 0 || g.RankB <= 0 {
			t.Errorf("game %s without ranks", g.MatchID)
		}
	}
}

func TestCS22024(t *testing.T) {
	ds, err := ReadCS22024("testdata/cs2-2024")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Notes["duplicate hltv_match_id across the enhanced files (de-duplicated)"] != 2 {
		t.Errorf("notes %v", ds.Notes)
	}
	db, rep := landAndLoad(t, ds)
	noQuarantine(t, rep)
	wantCounts(t, db,
		countCheck{"completed matches", `SELECT count(*) FROM matches WHERE status = 'completed'`, 7},
		countCheck{"map results", `SELECT count(*) FROM map_results`, 10},
	)
	// 2386834 Virtus.pro 1-2 3DMAX: map 1 Overpass 13-9 from the round winners, Virtus.pro started T
	if s := one[string](t, db, `SELECT concat_ws('|', r.map_name, r.score_a, r.score_b, r.first_half_a, r.first_half_b, r.first_half_side_a, m.format, m.score_a, m.score_b)
	    FROM map_results r JOIN matches m ON m.id = r.match_id JOIN teams ta ON ta.id = m.team_a_id
	    WHERE ta.name = 'Virtus.pro' AND m.scheduled_at = TIMESTAMPTZ '2025-10-16 05:40:00Z' AND r.map_number = 1`); s != "de_overpass|13|9|5|7|t|bo3|1|2" {
		t.Errorf("2386834 map 1: %s", s)
	}
	wantCounts(t, db,
		// LAN/online is known; tier/region are not
		countCheck{"tournaments without is_lan or with a tier", `SELECT count(*) FROM tournaments WHERE is_lan IS NULL OR tier IS NOT NULL`, 0},
		// the single-map matches: bo1, 1-0, with the map's round score
		countCheck{"bo1 matches with a map result", `SELECT count(*) FROM matches m JOIN map_results r ON r.match_id = m.id
	    WHERE m.format = 'bo1' AND greatest(m.score_a, m.score_b) = 1 AND greatest(r.score_a, r.score_b) >= 13`, 4},
	)
}

func TestCS22026(t *testing.T) {
	ds, err := ReadCS22026("testdata/cs2-2026_results.json")
	if err != nil {
		t.Fatal(err)
	}
	db, rep := landAndLoad(t, ds)
	noQuarantine(t, rep)
	wantCounts(t, db,
		countCheck{"completed matches", `SELECT count(*) FROM matches WHERE status = 'completed'`, 5},
		countCheck{"forfeits", `SELECT count(*) FROM matches WHERE result_type = 'forfeit'`, 2},
		countCheck{"map results", `SELECT count(*) FROM map_results`, 9},
		countCheck{"vetoes", `SELECT count(*) FROM vetoes`, 28},
		countCheck{"deciders", `SELECT count(*) FROM vetoes WHERE choice_type = 'decider' AND team_id IS NULL`, 4},
		countCheck{"players", `SELECT count(*) FROM players`, 30},
	)
	// 2389752 SportsBetExpert 2-0 regain: veto 1 regain bans Nuke; Inferno 13-7 (7:5; 6:2); sml 24-13, KAST 0.9
	if s := one[string](t, db, `SELECT concat_ws('|', v.choice_type, v.map_name, tv.name) FROM vetoes v JOIN teams tv ON tv.id = v.team_id
	    JOIN matches m ON m.id = v.match_id JOIN teams ta ON ta.id = m.team_a_id WHERE ta.name = 'SportsBetExpert' AND v."order" = 1`); s != "ban|de_nuke|regain" {
		t.Errorf("veto 1: %s", s)
	}
	if s := one[string](t, db, `SELECT concat_ws('|', r.map_name, r.score_a, r.score_b, r.first_half_a, r.first_half_b, r.second_half_a, r.second_half_b,
	    coalesce(r.first_half_side_a, 'null'), m.format, m.stage)
	    FROM map_results r JOIN matches m ON m.id = r.match_id JOIN teams ta ON ta.id = m.team_a_id
	    WHERE ta.name = 'SportsBetExpert' AND r.map_number = 1`); s != "de_inferno|13|7|7|5|6|2|null|bo3|Group A winners' match" {
		t.Errorf("map 1: %s", s)
	}
	if s := one[string](t, db, `SELECT concat_ws('|', s.kills, s.deaths, coalesce(CAST(s.assists AS VARCHAR), 'null'), s.adr, s.kast, s.rounds_played)
	    FROM player_stats s JOIN players p ON p.id = s.player_id JOIN matches m ON m.id = s.match_id
	    JOIN teams ta ON ta.id = m.team_a_id WHERE ta.name = 'SportsBetExpert' AND p.name = 'sml' AND s.map_number = 1`); s != "24|13|null|117.3|0.9|20" {
		t.Errorf("sml map 1: %s", s)
	}
	// Assists are missing, not zero: the rating scores that component as
	// neutral (1.00), like KAST, multi-kills and opening duels when absent.
	// sml map 1: 24-13, ADR 117.3, KAST 0.9, 20 rounds, nothing else.
	want := 0.30*(24.0/20)/0.67 + 0.15*(1-13.0/20)/0.33 + 0.25*117.3/75 + 0.05*1 + 0.10*0.9/0.79 + 0.10*1 + 0.05*1
	if got := one[string](t, db, `SELECT coalesce(CAST(s.rating AS VARCHAR), 'null')
	    FROM player_stats s JOIN players p ON p.id = s.player_id JOIN matches m ON m.id = s.match_id
	    JOIN teams ta ON ta.id = m.team_a_id WHERE ta.name = 'SportsBetExpert' AND p.name = 'sml' AND s.map_number = 1`); got != strconv.FormatFloat(math.Round(want*100)/100, 'f', -1, 64) {
		t.Errorf("sml map 1 rating %s, want %.2f (assists neutral, not 0 and not null)", got, want)
	}
	if n := one[int](t, db, `SELECT count(*) FROM player_stats WHERE assists IS NOT NULL OR rating IS NULL`); n != 0 {
		t.Errorf("%d stat lines with assists or without a rating", n)
	}
	// an overtime map: halves + overtime add up
	if n := one[int](t, db, `SELECT count(*) FROM map_results WHERE overtime_a IS NOT NULL
	    AND first_half_a + second_half_a + overtime_a = score_a AND first_half_b + second_half_b + overtime_b = score_b`); n == 0 {
		t.Error("no overtime map")
	}
}

func TestVetoParse(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"1. regain removed Nuke", "1 ban de_nuke B"},
		{"4. SportsBetExpert picked Dust2", "4 pick de_dust2 A"},
		{"7. Ancient was left over", "7 decider de_ancient "},
		{"3. raw.Team X destroyed Nuke", "bad"},
	} {
		v, ok := parseVeto(c.line, "SportsBetExpert", "regain", "A", "B")
		got := "bad"
		if ok {
			got = strings.Join([]string{strconv.Itoa(v.Order), v.ChoiceType, v.MapName, v.TeamID}, " ")
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.line, got, c.want)
		}
	}
	if MapName("Cobblestone") != "de_cbble" || MapName("Dust2") != "de_dust2" || MapName("Default") != "" {
		t.Error("map names")
	}
	if Slug("  Ninjas in Pyjamas ") != "ninjas-in-pyjamas" || Slug("ex-KRÜ") != "ex-krü" {
		t.Error("slug")
	}
}

// TestImportedTimesAreEstimates: the datasets carry no start or end times.
// Every imported completed match says its times are estimates; it starts
// at its scheduled time and ends as EstimatedEnd says (10 minutes a played
// map and 2 a round, 24 rounds for a map without its score), so no match
// ends before its played maps could (at 20 minutes a map at the least: a
// best of three played over two maps or more lasts over an hour); its
// result is known at the end of its UTC day, or at its end when later.
func TestImportedTimesAreEstimates(t *testing.T) {
	for source, path := range map[string]string{"csgo2015": "testdata/csgo2015_results.csv", "cs2-2024": "testdata/cs2-2024",
		"cs2-2026": "testdata/cs2-2026_results.json"} {
		t.Run(source, func(t *testing.T) {
			ds, err := Read(source, path)
			if err != nil {
				t.Fatal(err)
			}
			db, rep := landAndLoad(t, ds)
			noQuarantine(t, rep)
			n := one[int](t, db, `SELECT count(*) FROM matches WHERE status = 'completed'`)
			wantCounts(t, db,
				countCheck{"completed matches with their times marked as estimates", `SELECT count(*) FROM matches
				  WHERE status = 'completed' AND times_estimated AND started_at = scheduled_at`, n},
				countCheck{"completed matches ending as the maps played say", `
				  WITH maps AS (SELECT match_id, count(*) AS n, sum(10 + 2 * (score_a + score_b)) AS minutes FROM map_results GROUP BY ALL)
				  SELECT count(*) FROM matches m LEFT JOIN maps ON maps.match_id = m.id
				  WHERE m.status = 'completed' AND m.ended_at = m.started_at + to_minutes(CAST(coalesce(maps.minutes, 0) +
				    (greatest(CASE m.result_type WHEN 'forfeit' THEN 0 ELSE m.score_a + m.score_b END, coalesce(maps.n, 0)) - coalesce(maps.n, 0)) * 58 AS BIGINT))`, n},
				countCheck{"matches ending before their played maps could", `
				  SELECT count(*) FROM matches m WHERE status = 'completed' AND (ended_at < started_at + to_minutes(20 *
				    (SELECT count(*) FROM map_results r WHERE r.match_id = m.id))
				    OR format <> 'bo1' AND result_type = 'played' AND ended_at < started_at + INTERVAL 1 HOUR)`, 0},
				countCheck{"results known at the end of the match's UTC day, or at its end when later", `
				  SELECT count(*) FROM matches WHERE status = 'completed' AND result_known_at = greatest(ended_at,
				    CAST(date_trunc('day', scheduled_at AT TIME ZONE 'UTC') AS TIMESTAMP) AT TIME ZONE 'UTC' + INTERVAL '23:59:59')`, n},
				countCheck{"live and completed events not marked as estimates", `SELECT count(*) FROM match_events
				  WHERE status IN ('live', 'completed') AND NOT times_estimated`, 0},
			)
		})
	}
}

package validate

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/eodata/eo/importer"
	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/jobs"
	"github.com/eodata/eo/model"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/store"
)

// publishedSnapshot lands ds as `eo import` does, runs the pipeline once
// and returns a DuckDB connection with one view per published table.
func publishedSnapshot(t *testing.T, ds *importer.Dataset) *sql.DB {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.NewLocal(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	if _, err := importer.Land(ctx, st, ds, dir, now); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	r := jobs.NewRunner(jobs.Options{Pipeline: pipelines.Options{Store: st, WorkDir: filepath.Join(dir, "work"), Logger: quiet},
		Force: true, Now: func() time.Time { return now }})
	res, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Report.QuarantinedTotal(); n != 0 {
		t.Fatalf("%d quarantined lines", n)
	}
	return worldtest.OpenTables(t, res.Report.Tables)
}

// matchKey names a match the same way in both paths: its scheduled time
// and the two team names (the published tables carry no upstream id).
func matchKey(at time.Time, a, b string) string {
	return fmt.Sprintf("%s|%s|%s", at.UTC().Format(time.RFC3339), a, b)
}

// TestValidateMatchesPipeline: `eo validate`'s eo_model forecasts (model.Run
// on the dataset read through importer/, as validate.RunDataset feeds it)
// equal the published model_forecasts of `eo import` + `eo pipeline run`
// on the same dataset, match by match: one code path. Three excerpts: CS2
// 2026 (map-level stat lines: kill shares and lineups), CS:GO 2019 H2
// (round scores and HLTV ranks) and CS2 2024-25 (team-level kills, landed
// on the completed updates, and round-by-round map results).
func TestValidateMatchesPipeline(t *testing.T) {
	for _, c := range []struct {
		source, path string
		teamKills    bool // the dataset's team-level kills must move forecasts
	}{
		{"cs2-2026", "testdata/cs2-2026_trimmed.json", false},
		{"csgo2015", "testdata/csgo2015_2019h2.csv", false},
		{"cs2-2024", "testdata/cs2-2024/enhanced_matches_excerpt.csv", true},
	} {
		t.Run(c.source, func(t *testing.T) {
			ds, err := importer.Read(c.source, c.path)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := RunDataset(ds, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.teamKills {
				killsMatter(t, ds, rep)
			}
			names := map[string]string{}
			for _, tm := range ds.Teams {
				names[tm.ID] = tm.Name
			}
			want := map[string][]float64{}
			for i, g := range rep.Games {
				k := matchKey(g.ScheduledAt, names[g.TeamA], names[g.TeamB])
				want[k] = append(want[k], rep.Forecasts[EOModel][i])
			}
			db := publishedSnapshot(t, ds)
			got := publishedForecasts(t, db)
			compareForecasts(t, want, got, len(rep.Games))
			honestCapture(t, db)
		})
	}
}

// killsMatter: without its team-level kills the dataset's forecasts move
// (so a pipeline that did not read the landed kills would fail the
// comparison).
func killsMatter(t *testing.T, ds *importer.Dataset, rep *Report) {
	t.Helper()
	games := append([]importer.Game(nil), ds.Games...)
	n := 0
	for i := range games {
		if games[i].TeamKills {
			games[i].KillsA, games[i].KillsB, games[i].TeamKills = 0, 0, false
			n++
		}
	}
	if n < len(games)/2 {
		t.Fatalf("only %d of %d games carry team-level kills", n, len(games))
	}
	without, err := Run(games, Options{Ranks: RankHistory(ds.Teams)})
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for i, p := range without.Forecasts[EOModel] {
		if math.Abs(p-rep.Forecasts[EOModel][i]) > 1e-4 {
			moved++
		}
	}
	if moved < len(games)/10 {
		t.Fatalf("the team-level kills move only %d of %d forecasts", moved, len(games))
	}
}

func publishedForecasts(t *testing.T, db *sql.DB) map[string][]float64 {
	t.Helper()
	rows, err := db.Query(`SELECT f.scheduled_at, m.team_a_name, m.team_b_name, f.p_home, f.model_version
		FROM model_forecasts f JOIN matches m ON m.id = f.match_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string][]float64{}
	for rows.Next() {
		var at time.Time
		var a, b, v string
		var p float64
		if err := rows.Scan(&at, &a, &b, &p, &v); err != nil {
			t.Fatal(err)
		}
		if v != model.Version {
			t.Fatalf("model_version %q", v)
		}
		k := matchKey(at, a, b)
		got[k] = append(got[k], p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// compareForecasts: the same matches, the same probabilities (the
// published ones are rounded to 6 decimals).
func compareForecasts(t *testing.T, want, got map[string][]float64, n int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("published forecasts for %d keys, validate %d", len(got), len(want))
	}
	moved := 0
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Fatalf("%s: published %d forecasts, validate %d", k, len(g), len(w))
		}
		sort.Float64s(w)
		sort.Float64s(g)
		for i := range w {
			if math.Abs(w[i]-g[i]) > 2e-6 {
				t.Errorf("%s: validate %.6f, pipeline %.6f", k, w[i], g[i])
			}
			if math.Abs(w[i]-0.5) > 1e-9 {
				moved++
			}
		}
	}
	if moved < n/2 {
		t.Fatalf("only %d of %d forecasts differ from 0.5", moved, n)
	}
}

// honestCapture: every eo_model line is captured before its match starts
// and no earlier than the latest result known before then (an imported
// result is known at the end of its UTC day, or at its estimated end when
// later: importer.ResultKnownAt); the times of the imported matches are
// marked as estimates.
func honestCapture(t *testing.T, db *sql.DB) {
	t.Helper()
	bad := 0
	if err := db.QueryRow(`SELECT count(*) FROM odds_lines o JOIN matches m ON m.id = o.match_id
		WHERE o.source = 'eo_model' AND (o.captured_at >= m.scheduled_at OR o.captured_at < (
			SELECT max(p.result_known_at) FROM matches p WHERE p.status = 'completed' AND p.result_known_at < m.scheduled_at))`).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Errorf("%d eo_model lines captured before the latest result known at their match's start", bad)
	}
	rows, err := db.Query(`SELECT scheduled_at, started_at, ended_at, result_known_at, times_estimated FROM matches WHERE status = 'completed'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var at, start, end, known time.Time
		var estimated bool
		if err := rows.Scan(&at, &start, &end, &known, &estimated); err != nil {
			t.Fatal(err)
		}
		if want := importer.ResultKnownAt(at, end); !known.Equal(want) || !estimated || !start.Equal(at) || end.Before(start) {
			t.Fatalf("match at %s: started %s, ended %s, result known %s (want %s), estimated %v", at, start, end, known, want, estimated)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

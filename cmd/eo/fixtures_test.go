package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/eodata/eo/jobs"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// The fixtures a dry replay lands pass the pipeline's checks whole: the
// next run publishes the tournament and every match, scheduled, with an
// upstream id in live_ids (so the replay can play them), and quarantines
// nothing of them.
func TestReplayFixturesArePublishedWhole(t *testing.T) {
	ctx := context.Background()
	st, storeDir, work := fixtureWorld(t)
	c := common{cfg: Config{}, store: storeDir, work: work}
	r := jobs.NewRunner(jobs.Options{Pipeline: c.pipelineOptions(slog.New(slog.NewTextHandler(io.Discard, nil)), st)})
	before, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	if _, _, err := landFixtures(ctx, st, t.TempDir(), time.Now().UTC(), n); err != nil {
		t.Fatal(err)
	}
	after, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q := after.Report.QuarantinedTotal(); q != before.Report.QuarantinedTotal() {
		t.Fatalf("the fixtures' run quarantined %d lines (the world's run %d): %v", q, before.Report.QuarantinedTotal(),
			after.Report.Quarantined)
	}
	rows := func(res jobs.Result, table string) int64 {
		for _, tb := range res.Manifest.Tables {
			if tb.Name == table {
				return tb.Rows
			}
		}
		t.Fatalf("no table %s", table)
		return 0
	}
	// live_ids: the matches' and the tournament's upstream ids.
	for table, more := range map[string]int64{"matches": n, "tournaments": 1, "live_ids": n + 1} {
		if got := rows(after, table) - rows(before, table); got != more {
			t.Errorf("%s: %d more rows, want %d", table, got, more)
		}
	}
}

// A renamed team has a record per name in the world's teams: fixtures are
// drawn from the distinct ids, so no fixture is a team against itself
// (the pipeline quarantines such a match and its updates; drawn by record,
// the replay's refills lost one now and then).
func TestReplayFixturesNeverMeetThemselves(t *testing.T) {
	ctx := context.Background()
	st, _, _ := fixtureWorld(t)
	world, err := newestWorld(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	var teams []raw.Team
	if err := readEntity(ctx, st, world, raw.Teams, &teams); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, tm := range teams {
		ids[tm.ID] = true
	}
	if len(ids) == len(teams) {
		t.Fatalf("the world's %d team records have distinct ids: the test needs a renamed team", len(teams))
	}
	m, _, err := landFixtures(ctx, st, t.TempDir(), time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC), 500)
	if err != nil {
		t.Fatal(err)
	}
	var matches []raw.Match
	if err := readEntity(ctx, st, m.BatchID, raw.Matches, &matches); err != nil {
		t.Fatal(err)
	}
	if len(matches) != 500 {
		t.Fatalf("%d fixtures landed, want 500", len(matches))
	}
	for _, x := range matches {
		if x.TeamAID == x.TeamBID {
			t.Fatalf("fixture %s: %s against itself", x.ID, x.TeamAID)
		}
	}
}

// fixtureWorld is a generated 40-match world the fixture tests land on:
// its store, opened, and its store and work folders.
func fixtureWorld(t *testing.T) (st store.Store, dir, work string) {
	_, dir, work = generatedWorld(t, 40)
	st, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st, dir, work
}

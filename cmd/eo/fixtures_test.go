package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/eodata/eo/jobs"
	"github.com/eodata/eo/publish"
)

// The fixtures a dry replay lands pass the pipeline's checks whole: the
// next run publishes the tournament and every match, scheduled, with an
// upstream id in live_ids (so the replay can play them), and quarantines
// nothing of them.
func TestReplayFixturesArePublishedWhole(t *testing.T) {
	ctx := context.Background()
	_, store, work := generatedWorld(t, 40)
	st, err := publish.NewLocal(store)
	if err != nil {
		t.Fatal(err)
	}
	c := common{cfg: Config{}, store: store, work: work}
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

package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eodata/eo/jobs"
	"github.com/eodata/eo/publish"
)

// A scheduled run's pipeline runs in a child process: a child that dies of
// a signal (DuckDB's SIGSEGV, once, in a COPY to Parquet) fails that run
// with an error that says so, publishes nothing, and the scheduler's next
// run, a real `eo pipeline step` child, publishes.
func TestCrashedPipelineChildFailsOneRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, work := filepath.Join(dir, "store"), filepath.Join(dir, "work")
	if err := run(ctx, []string{"generate", "--store", store, "--matches", "40", "--now", "2026-06-01T12:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The child: the first one dies of SIGSEGV, the next ones are this
	// test binary as eo (TestMain runs main for `pipeline step`).
	mark := filepath.Join(dir, "crashed-once")
	script := filepath.Join(dir, "eo-child")
	body := "#!/bin/sh\nif [ ! -e '" + mark + "' ]; then touch '" + mark + "'; kill -SEGV $$; fi\nexec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := publish.NewLocal(store)
	if err != nil {
		t.Fatal(err)
	}
	c := common{cfg: Config{}, store: store, work: work}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := jobs.NewRunner(jobs.Options{Pipeline: c.pipelineOptions(log, st), Exec: childPipeline(script, c)})

	_, err = r.RunOnce(ctx)
	if err == nil || !strings.Contains(err.Error(), "ended by signal segmentation fault") {
		t.Fatalf("a run whose child died of SIGSEGV: %v, want an error naming the signal", err)
	}
	if _, err := publish.ReadPointer(ctx, st); err == nil {
		t.Fatal("the crashed run published a snapshot")
	}
	res, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatalf("the run after the crash: %v", err)
	}
	ptr, err := publish.ReadPointer(ctx, st)
	if err != nil || ptr.SnapshotID != res.Manifest.SnapshotID {
		t.Fatalf("after the crash, the next run published %q, the pointer names %q (%v)", res.Manifest.SnapshotID, ptr.SnapshotID, err)
	}
	if res.Report.RunID == "" || len(res.Report.Tables) == 0 || res.Report.Mode != "full" {
		t.Fatalf("the child's report did not come back whole: run %q, %d tables, mode %q",
			res.Report.RunID, len(res.Report.Tables), res.Report.Mode)
	}
}

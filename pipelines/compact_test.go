package pipelines_test

import (
	"context"
	"database/sql"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/synth"
)

// liveSplit is a synth sink that keeps the match updates and price captures
// (what the live lander lands) apart, in order, and passes the rest on.
type liveSplit struct {
	next synth.Sink
	kept []struct {
		e   raw.Entity
		rec any
	}
}

func (s *liveSplit) Add(e raw.Entity, rec any) error {
	if e == raw.MatchUpdates || e == raw.PriceCaptures {
		s.kept = append(s.kept, struct {
			e   raw.Entity
			rec any
		}{e, rec})
		return nil
	}
	return s.next.Add(e, rec)
}

// TestCompactionChangesNothingPublished: a world whose match updates and
// price captures landed as many small live batches in one hour publishes
// the same tables, row for row in order, before and after raw.Compact
// merged them; the merged batch holds their lines in order and the merged
// ones are gone; a second compaction finds nothing to do.
func TestCompactionChangesNothingPublished(t *testing.T) {
	ctx := context.Background()
	const n = 12
	st, dir, now, split := liveWorld(t, 7, 80)
	live := landSpread(t, st, dir, now, split, n)
	want := concatenated(t, st, live)
	before := publishedRows(t, runPipeline(t, st))

	done, err := raw.Compact(ctx, st, now.Add(3*time.Hour), raw.CompactOptions{Source: "live", TmpDir: dir})
	if err != nil || len(done) != 1 || len(done[0].Replaces) != n {
		t.Fatalf("compaction: %+v %v; want one batch replacing %d", done, err, n)
	}
	batches, err := raw.ListBatches(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) != 2 || batches[1].BatchID != done[0].BatchID || batches[1].Source != "live" {
		t.Fatalf("batches after compaction: %+v", batches)
	}
	if got := concatenated(t, st, batches[1:]); !maps2Equal(got, want) {
		t.Fatal("the merged batch does not hold the live batches' lines in their order")
	}
	if again, err := raw.Compact(ctx, st, now.Add(3*time.Hour), raw.CompactOptions{Source: "live", TmpDir: dir}); err != nil || len(again) != 0 {
		t.Fatalf("second compaction: %+v %v", again, err)
	}
	rep := runPipeline(t, st)
	if !slices.Equal(rep.Lineage, append([]string{batches[0].BatchID}, done[0].Replaces...)) {
		t.Errorf("lineage %v", rep.Lineage)
	}
	after := publishedRows(t, rep)
	for name, rows := range before {
		if !slices.Equal(rows, after[name]) {
			t.Errorf("table %s: %d rows before compaction, %d after, or in another order or content", name, len(rows), len(after[name]))
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d tables before, %d after", len(before), len(after))
	}
}

// landSpread lands split's match updates and price captures spread over n
// live batches, 5 s apart, in the hour after now, as the live lander lands
// them.
func landSpread(t *testing.T, st store.Store, dir string, now time.Time, split *liveSplit, n int) []raw.BatchManifest {
	t.Helper()
	var live []raw.BatchManifest
	for i := 0; i < n; i++ {
		var recs []liveRec
		for j := i; j < len(split.kept); j += n {
			recs = append(recs, split.kept[j])
		}
		live = append(live, landLive(t, st, dir, now.Add(time.Hour+time.Duration(i)*5*time.Second), recs, nil))
	}
	return live
}

// compactingStore runs compact once, just before the first read of a live
// batch's file: another runner's compaction, in the middle of this run.
type compactingStore struct {
	store.Store
	compact func()
}

func (s *compactingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if s.compact != nil && strings.HasPrefix(key, raw.BatchesPrefix) && !strings.HasSuffix(key, raw.BatchManifestName) {
		if f := s.compact; f != nil {
			s.compact = nil
			f()
		}
	}
	return s.Store.Get(ctx, key)
}

// TestCompactionDuringARunLosesNothing: a run that listed the live batches
// and reads them while another runner (a second jobs host, an eo pipeline
// run beside eo jobs) compacts them reads every line: the merged batches
// are kept for CompactOptions.Keep after the merged one lands, and deleted
// by a compaction after that.
func TestCompactionDuringARunLosesNothing(t *testing.T) {
	ctx := context.Background()
	st, dir, now, split := liveWorld(t, 7, 40)
	live := landSpread(t, st, dir, now, split, 6)
	want := publishedRows(t, runPipeline(t, st))
	at := now.Add(3 * time.Hour)
	mid := &compactingStore{Store: st, compact: func() {
		if done, err := raw.Compact(ctx, st, at, raw.CompactOptions{Source: "live", TmpDir: dir}); err != nil || len(done) != 1 {
			t.Errorf("the other runner's compaction: %+v %v", done, err)
		}
	}}
	rep := runPipeline(t, mid)
	if mid.compact != nil {
		t.Fatal("the run read no batch file")
	}
	if n := rep.QuarantinedTotal(); n != 0 {
		t.Fatalf("the run quarantined %d lines: %v", n, rep.Quarantined)
	}
	got := publishedRows(t, rep)
	for name, rows := range want {
		if !slices.Equal(rows, got[name]) {
			t.Errorf("table %s: %d rows without the compaction, %d with it mid-run", name, len(rows), len(got[name]))
		}
	}
	// The merged batches stay for Keep, then a compaction deletes them.
	present := func() int {
		n := 0
		for _, m := range live {
			if _, err := st.Stat(ctx, raw.BatchesPrefix+m.BatchID+"/"+raw.BatchManifestName); err == nil {
				n++
			}
		}
		return n
	}
	if n := present(); n != len(live) {
		t.Fatalf("%d of %d merged batches left right after the compaction", n, len(live))
	}
	if _, err := raw.Compact(ctx, st, time.Now().Add(2*time.Hour), raw.CompactOptions{Source: "live", TmpDir: dir}); err != nil {
		t.Fatal(err)
	}
	if n := present(); n != 0 {
		t.Fatalf("%d merged batches left after Keep", n)
	}
}

func maps2Equal(a, b map[raw.Entity]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// concatenated is each entity's lines of the batches, in batch order.
func concatenated(t *testing.T, st store.Store, bs []raw.BatchManifest) map[raw.Entity]string {
	t.Helper()
	out := map[raw.Entity]string{}
	for _, m := range bs {
		for _, e := range raw.Entities {
			if _, ok := m.Files[e]; !ok {
				continue
			}
			rc, err := st.Get(context.Background(), raw.BatchesPrefix+m.BatchID+"/"+string(e)+".ndjson")
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[e] += string(b)
		}
	}
	return out
}

// publishedRows reads every table a run exported, each row as text, in
// file order.
func publishedRows(t *testing.T, rep pipelines.Report) map[string][]string {
	t.Helper()
	return tableRows(t, rep, false)
}

// tableRows is publishedRows, with the match parts too (their frames as
// text) when parts.
func tableRows(t *testing.T, rep pipelines.Report, parts bool) map[string][]string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string][]string{}
	for _, tf := range rep.Tables {
		if !parts && strings.HasPrefix(filepath.Base(tf.Path), "match_parts") {
			continue // binary parts, rendered from the tables compared here
		}
		rows, err := db.Query("SELECT t::VARCHAR FROM read_parquet(?) t", tf.Path)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out[tf.Name] = append(out[tf.Name], s)
		}
		rows.Close()
	}
	return out
}

// TestThreadsDoNotChangeWhatIsPublished: the pipeline publishes the same
// tables, row for row in order, with one DuckDB thread (EO_DUCKDB_THREADS=1,
// the low-memory setting) as with one per core.
func TestThreadsDoNotChangeWhatIsPublished(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := worldtest.Local(ctx, dir, synth.Options{Seed: 11, Now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), Matches: 80}, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func(threads int) map[string][]string {
		rep, err := pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: t.TempDir(), Threads: threads, MemoryLimit: "1GB"})
		if err != nil {
			t.Fatal(err)
		}
		return publishedRows(t, rep)
	}
	one, all := run(1), run(0)
	if len(one) != len(all) || len(one) == 0 {
		t.Fatalf("%d tables with one thread, %d with one per core", len(one), len(all))
	}
	for name, rows := range all {
		if !slices.Equal(rows, one[name]) {
			t.Errorf("table %s differs between one thread (%d rows) and one per core (%d rows)", name, len(one[name]), len(rows))
		}
	}
}

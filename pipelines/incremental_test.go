package pipelines_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
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

// landLive lands recs (the live split of a world) as one live batch at t,
// with extra raw lines appended to entity files.
func landLive(t *testing.T, st store.Store, dir string, at time.Time, recs []liveRec, hostile map[raw.Entity][]string) raw.BatchManifest {
	t.Helper()
	b, err := raw.NewBatch(dir, "live", at)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := b.Add(r.e, r.rec); err != nil {
			t.Fatal(err)
		}
	}
	for e, lines := range hostile {
		for _, l := range lines {
			if err := b.AddLine(e, []byte(l)); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, err := b.Land(context.Background(), st, at)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type liveRec = struct {
	e   raw.Entity
	rec any
}

// liveWorld lands a synthetic world of n matches as of 2026-06-01 12:00
// UTC without its match updates and price captures, which it returns
// (split.kept) for the test to land as live batches.
func liveWorld(t *testing.T, seed int64, n int) (store.Store, string, time.Time, *liveSplit) {
	t.Helper()
	dir := t.TempDir()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	split := &liveSplit{}
	st, err := worldtest.Local(context.Background(), dir, synth.Options{Seed: seed, Now: now, Matches: n},
		func(b *raw.Batch) synth.Sink { split.next = b; return split })
	if err != nil {
		t.Fatal(err)
	}
	return st, dir, now, split
}

// allRows is every table's rows, the match parts' too: an incremental run
// renders only its scope's parts.
func allRows(t *testing.T, rep pipelines.Report) map[string][]string { return tableRows(t, rep, true) }

// TestIncrementalEqualsFull: a world lands its history in one batch and
// its match updates and price captures as live batches, one at a time;
// after each, a run on the same work folder is incremental (it reads the
// new batch only) and publishes, table for table and row for row in
// order, what a full rebuild of the same raw input on a fresh work folder
// publishes: also when the batch completes matches (the model runs again)
// and when it holds broken lines (quarantined, with the reasons a full run
// gives). A batch with a team record, and Options.Full, make a full run
// that says why.
func TestIncrementalEqualsFull(t *testing.T) {
	ctx := context.Background()
	st, dir, now, split := liveWorld(t, 5, 120)
	work := t.TempDir()
	run := func(o pipelines.Options) pipelines.Report {
		t.Helper()
		o.Store = st
		rep, err := pipelines.Run(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	compare := func(step string, inc pipelines.Report) {
		t.Helper()
		full := run(pipelines.Options{WorkDir: t.TempDir()})
		a, b := allRows(t, inc), allRows(t, full)
		if len(a) != len(b) || len(a) < len(pipelines.PublishedTables) {
			t.Fatalf("%s: %d tables incremental, %d full", step, len(a), len(b))
		}
		for name, rows := range b {
			if !slices.Equal(rows, a[name]) {
				t.Errorf("%s: table %s: incremental %d rows, full %d, or other rows or order", step, name, len(a[name]), len(rows))
			}
		}
		if !equalQuarantine(inc, full) {
			t.Errorf("%s: quarantined %v incremental, %v full", step, inc.Quarantined, full.Quarantined)
		}
		if inc.Mode == pipelines.ModeIncremental {
			checkDigests(t, step, filepath.Join(work, "state", "pipeline.duckdb"))
		}
	}
	kept := split.kept
	const n = 6
	part := func(i int) []liveRec { return kept[i*len(kept)/n : (i+1)*len(kept)/n] }

	first := run(pipelines.Options{WorkDir: work})
	if first.Mode != pipelines.ModeFull || !strings.Contains(first.FullReason, "no pipeline state") {
		t.Fatalf("first run: mode %q, reason %q", first.Mode, first.FullReason)
	}
	for i := 0; i < n; i++ {
		var hostile map[raw.Entity][]string
		if i == 2 {
			hostile = map[raw.Entity][]string{
				raw.MatchUpdates:  {`{"id": broken`, `{"match_id":"no-such-match","status":"live","changed_at":"2026-06-01T12:00:00Z"}`},
				raw.PriceCaptures: {`[1,2]`},
			}
		}
		m := landLive(t, st, dir, now.Add(time.Hour+time.Duration(i)*time.Minute), part(i), hostile)
		rep := run(pipelines.Options{WorkDir: work})
		if rep.Mode != pipelines.ModeIncremental || !slices.Equal(rep.Read, []string{m.BatchID}) {
			t.Fatalf("live batch %d: mode %q (%s), read %v; want incremental, reading %s", i, rep.Mode, rep.FullReason, rep.Read, m.BatchID)
		}
		if !slices.Contains(rep.Changed, "match_events") {
			t.Errorf("live batch %d changed %v; want match_events among them", i, rep.Changed)
		}
		if i%2 == 0 || i == n-1 {
			compare("after live batch "+string(rune('0'+i)), rep)
		}
	}

	// New prices of matches not completed, and a live tick of a live
	// match: the odds and the match move, the model's inputs do not (it
	// is not run again), and the rows still equal a full rebuild's.
	tick := liveTick(kept, now.Add(90*time.Minute))
	if len(tick) < 2 {
		t.Fatalf("the world has no match that is not completed: %d records", len(tick))
	}
	m := landLive(t, st, dir, now.Add(90*time.Minute), tick, nil)
	rep := run(pipelines.Options{WorkDir: work})
	if rep.Mode != pipelines.ModeIncremental || !slices.Equal(rep.Read, []string{m.BatchID}) ||
		!slices.Contains(rep.Changed, "odds_lines") || slices.Contains(rep.Changed, "rankings") ||
		slices.Contains(rep.Changed, "model_forecasts") {
		t.Errorf("prices and a live tick: mode %q (%s), read %v, changed %v; want odds_lines and not the model's tables",
			rep.Mode, rep.FullReason, rep.Read, rep.Changed)
	}
	compare("after prices and a live tick", rep)

	// A team record: the run is full, and says why; the next live batch
	// continues from its state.
	b, err := raw.NewBatch(dir, "scrape", now.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddLine(raw.Teams, []byte(`{"id":"t-new","name":"New Team","region":"EU","changed_at":"2026-06-01T12:30:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Land(ctx, st, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	rep = run(pipelines.Options{WorkDir: work})
	if rep.Mode != pipelines.ModeFull || !strings.Contains(rep.FullReason, "teams records") {
		t.Errorf("a batch with a team record: mode %q, reason %q", rep.Mode, rep.FullReason)
	}
	rep = run(pipelines.Options{WorkDir: work, Full: true})
	if rep.Mode != pipelines.ModeFull || rep.FullReason != "asked for (--full)" {
		t.Errorf("Full: mode %q, reason %q", rep.Mode, rep.FullReason)
	}
	if rep = run(pipelines.Options{WorkDir: work}); rep.Mode != pipelines.ModeIncremental || len(rep.Read) != 0 {
		t.Errorf("nothing new: mode %q (%s), read %v", rep.Mode, rep.FullReason, rep.Read)
	}
	compare("with nothing new", rep)
}

// checkDigests: every digest table the incremental runs keep in the state
// (seg_digest_<table>: the segment columns, the row count n, the sum h of
// the rows' hashes) holds what its table's rows give now, and there are
// some (a full run makes them with the state).
func checkDigests(t *testing.T, step, state string) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`ATTACH '` + state + `' AS st (READ_ONLY)`); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT table_name, string_agg(column_name, ', ' ORDER BY column_index) FILTER (WHERE column_name NOT IN ('n', 'h'))
		FROM duckdb_columns() WHERE database_name = 'st' AND table_name LIKE 'seg\_digest\_%' ESCAPE '\' GROUP BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	for rows.Next() {
		var table, seg string
		if err := rows.Scan(&table, &seg); err != nil {
			t.Fatal(err)
		}
		digests[table] = seg
	}
	rows.Close()
	if len(digests) == 0 {
		t.Errorf("%s: the state keeps no digest table", step)
	}
	for table, seg := range digests {
		now := fmt.Sprintf(`SELECT %[2]s, count(*) AS n, sum(hash(r)) AS h FROM st.%[1]s AS r GROUP BY %[2]s`,
			strings.TrimPrefix(table, "seg_digest_"), seg)
		var n int64
		q := fmt.Sprintf(`SELECT (SELECT count(*) FROM (FROM st.%[1]s EXCEPT %[2]s)) + (SELECT count(*) FROM (%[2]s EXCEPT FROM st.%[1]s))`, table, now)
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %s: %v", step, table, err)
		}
		if n != 0 {
			t.Errorf("%s: %s: %d segments whose digest is not their rows'", step, table, n)
		}
	}
}

// equalQuarantine: the same quarantined lines by entity and reason,
// counting in the incremental run's report only what its new batches
// brought (each run reports its own lines).
func equalQuarantine(inc, full pipelines.Report) bool {
	for e, reasons := range inc.Quarantined {
		for reason, n := range reasons {
			if full.Quarantined[e][reason] < n {
				return false
			}
		}
	}
	return true
}

// liveTick is, for the matches of recs without a completed or cancelled
// update, each one's price captures again at at with other prices, and
// the last update of each live one again at at.
func liveTick(recs []liveRec, at time.Time) []liveRec {
	done := map[string]bool{}
	last := map[string]raw.MatchUpdate{}
	for _, r := range recs {
		if u, ok := r.rec.(raw.MatchUpdate); ok {
			if u.Status == "completed" || u.Status == "cancelled" {
				done[u.MatchID] = true
			}
			last[u.MatchID] = u
		}
	}
	var out []liveRec
	for _, r := range recs {
		if c, ok := r.rec.(raw.PriceCapture); ok && c.MatchID != "" && !done[c.MatchID] {
			c.CapturedAt, c.Price = at, c.Price*1.05
			out = append(out, liveRec{raw.PriceCaptures, c})
		}
	}
	for id, u := range last {
		if !done[id] && u.Status == "live" {
			u.ChangedAt = at
			out = append(out, liveRec{raw.MatchUpdates, u})
		}
	}
	return out
}

// TestPartsRenderedByRange: a full run that renders the match parts a
// range of matches at a time (Options.PartsChunk) writes the same rows as
// one that renders them all at once.
func TestPartsRenderedByRange(t *testing.T) {
	ctx := context.Background()
	st, err := worldtest.Local(ctx, t.TempDir(), synth.Options{Seed: 3, Now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), Matches: 80}, nil)
	if err != nil {
		t.Fatal(err)
	}
	parts := func(chunk int) []string {
		rep, err := pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: t.TempDir(), PartsChunk: chunk})
		if err != nil {
			t.Fatal(err)
		}
		return allRows(t, rep)["match_parts"]
	}
	whole, ranged := parts(0), parts(17)
	if len(whole) < 80 || !slices.Equal(whole, ranged) {
		t.Fatalf("%d part rows rendered at once, %d by ranges of 17 matches, or other rows", len(whole), len(ranged))
	}
}

// TestDamagedStateMeansAFullRun: a state file that is not a database, or
// one that lost a table, makes the next run a full rebuild that says why,
// never a failed run; the rebuild writes a good state again.
func TestDamagedStateMeansAFullRun(t *testing.T) {
	ctx := context.Background()
	st, dir, _, split := liveWorld(t, 9, 40)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	work := t.TempDir()
	run := func() pipelines.Report {
		t.Helper()
		rep, err := pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: work})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	run()
	state := filepath.Join(work, "state", "pipeline.duckdb")
	for i, damage := range []struct {
		name   string
		do     func() error
		reason string
	}{
		{"not a database", func() error { return os.WriteFile(state, []byte("not a database"), 0o644) }, "cannot be opened"},
		{"a table dropped", func() error {
			db, err := sql.Open("duckdb", state)
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.Exec("DROP TABLE v_match_updates")
			return err
		}, "failed before it changed the state"},
	} {
		if err := damage.do(); err != nil {
			t.Fatal(err)
		}
		landLive(t, st, dir, now.Add(time.Hour+time.Duration(i)*time.Minute), split.kept[i*10:i*10+10], nil)
		if rep := run(); rep.Mode != pipelines.ModeFull || !strings.Contains(rep.FullReason, damage.reason) {
			t.Errorf("%s: mode %q, reason %q; want a full run, %q", damage.name, rep.Mode, rep.FullReason, damage.reason)
		}
		landLive(t, st, dir, now.Add(time.Hour+time.Duration(i)*time.Minute+30*time.Second), split.kept[i*10+10:i*10+20], nil)
		if rep := run(); rep.Mode != pipelines.ModeIncremental {
			t.Errorf("after the rebuild (%s): mode %q, reason %q", damage.name, rep.Mode, rep.FullReason)
		}
	}
}

// TestIncrementalOverItsBudget: an incremental run whose DuckDB budget
// (Options.IncrementalMemory) is too small for its statements raises it to
// the configured limit, says so in its report, stays incremental and
// publishes the rows a full rebuild publishes. 2 MB runs out in the first
// statements, 64 MB (at this commit) in the merge, after the state has
// changed; the default budget needs no raise on the same batch.
func TestIncrementalOverItsBudget(t *testing.T) {
	ctx := context.Background()
	for _, budget := range []string{"", "2MB", "64MB"} {
		st, dir, now, split := liveWorld(t, 11, 80)
		work := t.TempDir()
		if _, err := pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: work}); err != nil {
			t.Fatal(err)
		}
		landLive(t, st, dir, now.Add(time.Hour), split.kept[:len(split.kept)/3], nil)
		inc, err := pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: work, IncrementalMemory: budget})
		if err != nil {
			t.Fatalf("budget %q: %v", budget, err)
		}
		if inc.Mode != pipelines.ModeIncremental {
			t.Fatalf("budget %q: mode %q (%s); want incremental", budget, inc.Mode, inc.FullReason)
		}
		t.Logf("budget %q: raised by %q", budget, inc.BudgetRaised)
		if budget == "" && inc.BudgetRaised != "" || budget == "2MB" && inc.BudgetRaised == "" {
			t.Errorf("budget %q: budget raised by %q", budget, inc.BudgetRaised)
		}
		full, err := pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		a, b := allRows(t, inc), allRows(t, full)
		if len(a) != len(b) {
			t.Fatalf("budget %q: %d tables incremental, %d full", budget, len(a), len(b))
		}
		for name, rows := range b {
			if !slices.Equal(rows, a[name]) {
				t.Errorf("budget %q: table %s: incremental %d rows, full %d, or other rows or order", budget, name, len(a[name]), len(rows))
			}
		}
	}
}

package pipelines_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// changeEntry is a row of the published changes table.
type changeEntry struct {
	pos           int64
	typ, id, kind string
	changedAt     time.Time
}

// readChanges reads the run's changes table (the horizon row's NULL id as an empty string).
func readChanges(t *testing.T, db *sql.DB, rep pipelines.Report) []changeEntry {
	t.Helper()
	rows, err := db.Query(fmt.Sprintf(`SELECT position, entity_type, coalesce(entity_id, ''), kind, changed_at FROM read_parquet('%s')`, tablePath(t, rep, "changes")))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []changeEntry
	for rows.Next() {
		var e changeEntry
		if err := rows.Scan(&e.pos, &e.typ, &e.id, &e.kind, &e.changedAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func tablePath(t *testing.T, rep pipelines.Report, name string) string {
	t.Helper()
	for _, tf := range rep.Tables {
		if tf.Name == name {
			if name == "changes" && !tf.Internal {
				t.Fatal("the changes table is published as a customer table")
			}
			return tf.Path
		}
	}
	t.Fatalf("the run published no %s table", name)
	return ""
}

func idWhere(t *testing.T, db *sql.DB, rep pipelines.Report, table, where string) string {
	t.Helper()
	var id string
	if err := db.QueryRow(fmt.Sprintf(`SELECT id FROM read_parquet('%s') WHERE %s`, tablePath(t, rep, table), where)).Scan(&id); err != nil {
		t.Fatalf("%s where %s: %v", table, where, err)
	}
	return id
}

// checkLog holds the log's shape: the horizon row first, then entries
// after it, numbered one by one; it returns the entries of the run that
// started at (the run's report).
func checkLog(t *testing.T, log []changeEntry, rep pipelines.Report) (horizon int64, fresh []changeEntry) {
	t.Helper()
	if len(log) == 0 || log[0].typ != "_log" || log[0].kind != "horizon" {
		t.Fatalf("the log does not start with its horizon: %+v", log)
	}
	horizon = log[0].pos
	for i, e := range log[1:] {
		if want := horizon + 1 + int64(i); i > 0 && e.pos != log[i].pos+1 || i == 0 && e.pos <= horizon {
			t.Fatalf("entry %d at position %d (want %d, after %d): %+v", i, e.pos, want, log[i].pos, log)
		}
		if e.changedAt.Equal(rep.StartedAt.Truncate(time.Microsecond)) {
			fresh = append(fresh, e)
		}
	}
	return horizon, fresh
}

func kinds(es []changeEntry) map[string]int {
	out := map[string]int{}
	for _, e := range es {
		out[e.typ+" "+e.kind]++
	}
	return out
}

func has(es []changeEntry, typ, id, kind string) bool {
	for _, e := range es {
		if e.typ == typ && e.id == id && e.kind == kind {
			return true
		}
	}
	return false
}

// TestChangeLog runs the pipeline over a store as it changes: a first run
// records no entry (nothing holds a cursor from before it), a rename and a
// new match are an updated team (and its matches, which carry its name)
// and a created match, the batch that brought them removed again is the
// match deleted, a run with nothing new appends nothing, and a shorter
// retention trims the log, moving its horizon past the trimmed entries.
func TestChangeLog(t *testing.T) {
	defer func(r time.Duration) { pipelines.ChangeRetention = r }(pipelines.ChangeRetention)
	ctx := context.Background()
	st := store.NewMemory()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)

	rep1 := runPipeline(t, st)
	log1 := readChanges(t, db, rep1)
	if len(log1) != 1 {
		t.Fatalf("a first run logs its horizon only: %+v", log1)
	}
	h1, _ := checkLog(t, log1, rep1)
	if h1 != rep1.StartedAt.UnixMicro() {
		t.Fatalf("a new log's horizon %d, the run started at %d µs", h1, rep1.StartedAt.UnixMicro())
	}

	later := landedAt.Add(24 * time.Hour)
	batch := worldtest.LandDir(t, st, t.TempDir(), later, map[raw.Entity][]string{
		raw.Teams:   {`{"id":"tm-1","name":"Alpha Pack","short_name":"AP","region":"Europe","country_code":"DE","external_rank":3,"changed_at":"2025-03-06T00:00:00Z"}`},
		raw.Matches: {`{"id":"m-9","tournament_id":"tr-1","team_a_id":"tm-2","team_b_id":"tm-3","format":"bo1","stage":"Group Stage","scheduled_at":"2030-02-01T12:00:00Z","changed_at":"2025-03-06T00:00:00Z"}`},
	})
	rep2 := runPipeline(t, st)
	log2 := readChanges(t, db, rep2)
	h2, fresh := checkLog(t, log2, rep2)
	team := idWhere(t, db, rep2, "teams", "name = 'Alpha Pack'")
	m9 := idWhere(t, db, rep2, "matches", "scheduled_at = TIMESTAMPTZ '2030-02-01 12:00:00Z'")
	if h2 != h1 || len(fresh) != len(log2)-1 || !has(fresh, "team", team, "updated") || !has(fresh, "match", m9, "created") {
		t.Fatalf("after a rename and a new match (horizon %d, was %d): %v", h2, h1, log2)
	}
	// tm-1's matches carry its name: updated; nothing else changed.
	var tm1Matches int
	if err := db.QueryRow(fmt.Sprintf(`SELECT count(*) FROM read_parquet('%s') WHERE team_a_id = '%s' OR team_b_id = '%s'`,
		tablePath(t, rep2, "matches"), team, team)).Scan(&tm1Matches); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"team updated": 1, "match created": 1, "match updated": tm1Matches}
	if got := kinds(fresh); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("entries after a rename and a new match: %v, want %v", got, want)
	}

	// The batch removed: the match is gone (deleted), the name back.
	objs, err := st.List(ctx, raw.BatchesPrefix+batch+"/")
	if err != nil || len(objs) == 0 {
		t.Fatalf("the batch's objects: %v %v", objs, err)
	}
	for _, o := range objs {
		if err := st.Delete(ctx, o.Key); err != nil {
			t.Fatal(err)
		}
	}
	rep3 := runPipeline(t, st)
	log3 := readChanges(t, db, rep3)
	_, fresh3 := checkLog(t, log3, rep3)
	want = map[string]int{"team updated": 1, "match deleted": 1, "match updated": tm1Matches}
	if got := kinds(fresh3); fmt.Sprint(got) != fmt.Sprint(want) || !has(fresh3, "match", m9, "deleted") {
		t.Fatalf("entries after the batch was removed: %v, want %v", got, want)
	}
	if fresh3[0].pos != log2[len(log2)-1].pos+1 || len(log3) != len(log2)+len(fresh3) {
		t.Fatalf("the log does not continue the previous one: %v then %v", log2, log3)
	}

	// Nothing new: nothing appended, the log as it was.
	rep4 := runPipeline(t, st)
	if log4 := readChanges(t, db, rep4); fmt.Sprint(log4) != fmt.Sprint(log3) {
		t.Fatalf("a run with nothing new changed the log:\n%v\n%v", log3, log4)
	}

	// A shorter retention trims every entry: the horizon moves to the last.
	pipelines.ChangeRetention = time.Nanosecond
	rep5 := runPipeline(t, st)
	log5 := readChanges(t, db, rep5)
	if len(log5) != 1 || log5[0].pos != log3[len(log3)-1].pos || !log5[0].changedAt.Equal(rep5.StartedAt.Truncate(time.Microsecond)) {
		t.Fatalf("after trimming every entry: %v (the last was %d)", log5, log3[len(log3)-1].pos)
	}
	// A new entry after a trim continues the numbering.
	pipelines.ChangeRetention = 7 * 24 * time.Hour
	worldtest.LandDir(t, st, t.TempDir(), later.Add(time.Hour), map[raw.Entity][]string{
		raw.Teams: {`{"id":"tm-1","name":"Alpha Pack","short_name":"AP","region":"Europe","country_code":"DE","external_rank":3,"changed_at":"2025-03-07T00:00:00Z"}`},
	})
	rep6 := runPipeline(t, st)
	log6 := readChanges(t, db, rep6)
	if _, fresh6 := checkLog(t, log6, rep6); len(fresh6) == 0 || fresh6[0].pos != log5[0].pos+1 {
		t.Fatalf("after the trim: %v", log6)
	}

	// The digests lost: the changes since the last run are unknown, so the
	// log starts again after its last entry (every cursor is older).
	if err := st.Delete(ctx, "state/entity_digests.parquet"); err != nil {
		t.Fatal(err)
	}
	rep7 := runPipeline(t, st)
	log7 := readChanges(t, db, rep7)
	if len(log7) != 1 || log7[0].pos <= log6[len(log6)-1].pos {
		t.Fatalf("after the digests were lost: %v (the last entry was %d)", log7, log6[len(log6)-1].pos)
	}
	if !strings.HasPrefix(filepath.Base(tablePath(t, rep7, "changes")), "changes") {
		t.Fatal(tablePath(t, rep7, "changes"))
	}
}

// TestChangeLogIncremental: an incremental run (a live batch of a known
// match, on the work folder of the run before) appends the match it
// changed, continuing the log of the full run before it, and publishes it.
func TestChangeLogIncremental(t *testing.T) {
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
	work := t.TempDir()
	run := func() pipelines.Report {
		t.Helper()
		rep, err := pipelines.Run(context.Background(), pipelines.Options{Store: st, WorkDir: work})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rep1 := run()
	log1 := readChanges(t, db, rep1)
	b, err := raw.NewBatch(t.TempDir(), "live", landedAt.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddLine(raw.MatchUpdates, []byte(`{"match_id":"m-3","status":"live","score_a":0,"score_b":0,"changed_at":"2025-03-10T00:30:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Land(context.Background(), st, landedAt.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	rep2 := run()
	if rep2.Mode != pipelines.ModeIncremental {
		t.Fatalf("the live batch's run: %s (%s)", rep2.Mode, rep2.FullReason)
	}
	log2 := readChanges(t, db, rep2)
	h, fresh := checkLog(t, log2, rep2)
	var live string
	if err := db.QueryRow(fmt.Sprintf(`SELECT id FROM read_parquet('%s') WHERE scheduled_at = TIMESTAMPTZ '2030-01-02 12:00:00Z'`, tablePath(t, rep2, "matches"))).Scan(&live); err != nil {
		t.Fatal(err)
	}
	if h != log1[0].pos || len(fresh) == 0 || !has(fresh, "match", live, "updated") || kinds(fresh)["match created"] > 0 {
		t.Fatalf("after an incremental run: %v (the full run's log %v)", log2, log1)
	}
}

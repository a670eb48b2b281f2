package pipelines_test

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/marcboeker/go-duckdb/v2"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/tables"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var landedAt = time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)

func runPipeline(t *testing.T, st store.Store) pipelines.Report {
	t.Helper()
	rep, err := pipelines.Run(context.Background(), pipelines.Options{Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// fixtureRun runs the pipeline on the fixture world and opens an in-memory
// DuckDB to read what it published.
func fixtureRun(t *testing.T) (pipelines.Report, *sql.DB) {
	t.Helper()
	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
	rep := runPipeline(t, st)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return rep, db
}

// dump renders every exported table as text, one row a line, in file order.
func dump(t *testing.T, rep pipelines.Report) map[string]string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("SET TimeZone = 'UTC'"); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tf := range rep.Tables {
		q := fmt.Sprintf("SELECT * FROM read_parquet('%s')", tf.Path)
		if tf.Name == "changes" {
			// The change log holds its runs' times (its horizon, its
			// entries' changed_at), which differ from run to run: positions
			// are rendered from the horizon, times not at all
			// (TestChangeLog holds them).
			q = fmt.Sprintf(`SELECT position - min(position) OVER () AS position, entity_type, entity_id, kind,
				CAST(NULL AS TIMESTAMPTZ) AS changed_at FROM read_parquet('%s') ORDER BY position`, tf.Path)
		}
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		types, _ := rows.ColumnTypes()
		var sb strings.Builder
		for i, c := range cols {
			fmt.Fprintf(&sb, "%s:%s ", c, types[i].DatabaseTypeName())
		}
		sb.WriteString("\n")
		eachRow(t, rows, func(vals []any) {
			for i, v := range vals {
				if i > 0 {
					sb.WriteString(" | ")
				}
				switch x := v.(type) {
				case time.Time:
					sb.WriteString(x.UTC().Format(time.RFC3339Nano))
				case []byte:
					fmt.Fprintf(&sb, "%x", x)
				case nil:
					sb.WriteString("NULL")
				default:
					fmt.Fprint(&sb, x)
				}
			}
			sb.WriteString("\n")
		})
		out[tf.Name] = sb.String()
	}
	return out
}

// eachRow calls f with the values of every row of rows, in order, and
// closes rows.
func eachRow(t *testing.T, rows *sql.Rows, f func(vals []any)) {
	t.Helper()
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		f(vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestGolden(t *testing.T) {
	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
	rep := runPipeline(t, st)
	if q := rep.QuarantinedTotal(); q != 0 {
		t.Fatalf("clean fixture quarantined %d lines: %v", q, rep.Quarantined)
	}
	got := dump(t, rep)
	// match_parts is read above (DuckDB opens it) but not compared: its
	// frames are zstd output, which a compression library upgrade may
	// change byte for byte. What they hold is held by the edge's
	// TestMatchPartsEqualPartsRenderedAtLoad: every part of every match
	// equal to the one rendered from the tables above.
	if _, ok := got[tables.MatchPartsTable]; !ok {
		t.Fatalf("the run published no %s table", tables.MatchPartsTable)
	}
	delete(got, tables.MatchPartsTable)
	// model_report is one row of HTML (the review page, drawn by
	// model.Report): its layout is held by the model's tests, its numbers by
	// the model_metrics and model_comparison goldens; TestModelStepOpenGate
	// checks it is the report put in the store, TestRerunIsIdentical that a
	// re-run writes it byte for byte.
	if !strings.Contains(got["model_report"], "<!doctype html>") {
		t.Fatalf("model_report holds no report:\n%.300s", got["model_report"])
	}
	delete(got, "model_report")
	for name, text := range got {
		path := filepath.Join("testdata", "golden", name+".txt")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./pipelines -run TestGolden -update)", name, err)
		}
		if string(want) != text {
			t.Errorf("table %s differs from %s:\n--- want\n%s\n--- got\n%s", name, path, want, text)
		}
	}
}

// TestRerunIsIdentical: the same raw input gives the same ids and contents,
// both with the registry in the store (a re-run) and without it (a full
// rebuild into a fresh store from the same batches).
func TestRerunIsIdentical(t *testing.T) {
	dir := t.TempDir()
	st, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
	first := dump(t, runPipeline(t, st))
	second := dump(t, runPipeline(t, st))
	for name := range first {
		if first[name] != second[name] {
			t.Errorf("re-run changed table %s", name)
		}
	}
	// Full rebuild: wipe the registries, keep the raw batches.
	for _, k := range []string{"state/ids.parquet", "state/slugs.parquet"} {
		if err := st.Delete(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	third := dump(t, runPipeline(t, st))
	for name := range first {
		if first[name] != third[name] {
			t.Errorf("full rebuild changed table %s", name)
		}
	}
}

func TestRenameChangesSlugOnly(t *testing.T) {
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
	before := dump(t, runPipeline(t, st))
	if !strings.Contains(before["teams"], "bravo-reborn") {
		t.Fatalf("renamed team should carry the new name's slug:\n%s", before["teams"])
	}
	// A later batch renames Alpha Wolves.
	later := landedAt.Add(24 * time.Hour)
	worldtest.LandDir(t, st, t.TempDir(), later, map[raw.Entity][]string{raw.Teams: {
		`{"id":"tm-1","name":"Alpha Pack","short_name":"AP","region":"Europe","country_code":"DE","external_rank":3,"changed_at":"2025-03-06T00:00:00Z"}`}})
	after := dump(t, runPipeline(t, st))
	if !strings.Contains(after["teams"], "alpha-pack") || strings.Contains(after["teams"], "alpha-wolves") {
		t.Fatalf("slug should follow the rename:\n%s", after["teams"])
	}
	idOf := func(text, slug string) string {
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "| "+slug+" |") {
				return strings.SplitN(l, " | ", 2)[0]
			}
		}
		return ""
	}
	if a, b := idOf(before["teams"], "alpha-wolves"), idOf(after["teams"], "alpha-pack"); a == "" || a != b {
		t.Fatalf("a rename must keep the id: %q vs %q", a, b)
	}
	if idOf(before["teams"], "bravo-reborn") != idOf(after["teams"], "bravo-reborn") {
		t.Fatal("an unrenamed team's slug or id changed")
	}
}

func TestBadRowsAreQuarantined(t *testing.T) {
	st := store.NewMemory()
	bad := map[raw.Entity][]string{
		raw.Teams: {
			`{"id":"tm-9","name":"Broken`, // malformed JSON
			`{"id":"tm-8","name":"Eight","region":"Mars","changed_at":"2025-03-01T10:00:00Z"}`,                         // unknown enum value
			`{"id":"tm-7","region":"Europe","changed_at":"2025-03-01T10:00:00Z"}`,                                      // missing name
			`{"id":"tm-6","name":"Six","region":"Europe","external_rank":"first","changed_at":"2025-03-01T10:00:00Z"}`, // bad type
		},
		raw.Matches: {
			`{"id":"m-9","tournament_id":"tr-1","team_a_id":"tm-1","team_b_id":"tm-404","format":"bo3","stage":"x","scheduled_at":"2025-03-02T15:00:00Z","changed_at":"2025-03-01T10:00:00Z"}`, // broken reference
		},
		raw.MatchUpdates: {
			`{"match_id":"m-9","status":"live","score_a":0,"score_b":0,"changed_at":"2025-03-02T15:00:00Z"}`,      // child of a quarantined match
			`{"match_id":"m-2","status":"completed","score_a":3,"score_b":0,"changed_at":"2025-03-01T09:00:00Z"}`, // impossible score for bo1
		},
		raw.MapResults: {
			`{"match_id":"m-1","map_number":3,"map_name":"de_inferno","score_a":13,"score_b":13,"first_half_side_a":"t","changed_at":"2025-03-02T17:00:00Z"}`, // impossible score
		},
		raw.PriceCaptures: {
			`{"book":"bk-1","market":"match_winner","match_id":"m-1","outcome":"home","price":0.5,"captured_at":"2025-03-01T12:00:00Z"}`,
		},
		raw.Players: {`[1,2,3]`, `   `},
	}
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, bad)
	rep := runPipeline(t, st)
	want := map[string]string{
		"teams/malformed JSON":                 "1",
		"teams/unknown region value":           "1",
		"teams/missing name":                   "1",
		"teams/invalid external_rank":          "1",
		"matches/unknown team_b_id":            "1",
		"match_updates/unknown match_id":       "1",
		"match_updates/impossible score":       "1",
		"map_results/impossible score":         "1",
		"price_captures/price must be above 1": "1",
		"players/malformed JSON":               "1",
	}
	for k, n := range want {
		parts := strings.SplitN(k, "/", 2)
		if got := fmt.Sprint(rep.Quarantined[parts[0]][parts[1]]); got != n {
			t.Errorf("quarantined %s: got %s, want %s (all: %v)", k, got, n, rep.Quarantined)
		}
	}
	if rep.QuarantinedTotal() != len(want) {
		t.Errorf("quarantined %d lines, want %d: %v", rep.QuarantinedTotal(), len(want), rep.Quarantined)
	}
	// The rest of the batch landed: the fixture's tables are unchanged.
	clean := store.NewMemory()
	worldtest.LandDir(t, clean, "testdata/fixture", landedAt, nil)
	want2, got2 := dump(t, runPipeline(t, clean)), dump(t, rep)
	for _, name := range []string{"teams", "matches", "map_results", "players"} {
		if want2[name] != got2[name] {
			t.Errorf("bad rows changed table %s:\n%s\nvs\n%s", name, want2[name], got2[name])
		}
	}
	// The quarantine file keeps every line with its reason, in the raw area.
	objs, err := st.List(context.Background(), pipelines.QuarantinePrefix)
	if err != nil || len(objs) != 1 {
		t.Fatalf("quarantine objects: %v %v", objs, err)
	}
	body, _ := store.GetBytes(context.Background(), st, objs[0].Key)
	for _, s := range []string{`"reason":"unknown team_b_id"`, `tm-404`, `"reason":"malformed JSON"`, `Broken`} {
		if !strings.Contains(string(body), s) {
			t.Errorf("quarantine file lacks %s:\n%s", s, body)
		}
	}
}

func TestNoBatches(t *testing.T) {
	_, err := pipelines.Run(context.Background(), pipelines.Options{Store: store.NewMemory(), WorkDir: t.TempDir()})
	if !errors.Is(err, pipelines.ErrNoBatches) {
		t.Fatalf("got %v, want ErrNoBatches", err)
	}
}

func TestMintIDIsV7AndStable(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	a := pipelines.MintID("team", "tm-1", at)
	if a != pipelines.MintID("team", "tm-1", at) {
		t.Fatal("not deterministic")
	}
	if a == pipelines.MintID("team", "tm-2", at) || a == pipelines.MintID("player", "tm-1", at) {
		t.Fatal("different keys share an id")
	}
	if a.Version() != 7 || a.Variant().String() != "RFC4122" {
		t.Fatalf("not a v7 uuid: %s", a)
	}
	sec, nsec := a.Time().UnixTime()
	if time.Unix(sec, nsec).UTC() != at {
		t.Fatalf("timestamp %v, want %v", time.Unix(sec, nsec).UTC(), at)
	}
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Natus Vincere": "natus-vincere", "Café Cup 2025": "cafe-cup-2025", "  --x--  ": "x",
		"FURIA Esports!": "furia-esports", "Nick Ñoño": "nick-nono", "日本": "",
	} {
		if got := pipelines.Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSnapshotDocumentsEveryTable holds SNAPSHOT.md to what the pipeline
// publishes: a section per exported table (and none for a table that is not
// exported), listing exactly the table's columns.
func TestSnapshotDocumentsEveryTable(t *testing.T) {
	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
	got := dump(t, runPipeline(t, st))
	b, err := os.ReadFile("../SNAPSHOT.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := documentedColumns(string(b))
	for name, text := range got {
		header, _, _ := strings.Cut(text, "\n")
		var cols []string
		for _, f := range strings.Fields(header) {
			c, _, _ := strings.Cut(f, ":")
			cols = append(cols, c)
		}
		d, ok := doc[name]
		if !ok {
			t.Errorf("SNAPSHOT.md has no section for the published table %s", name)
			continue
		}
		if strings.Join(d, ",") != strings.Join(cols, ",") {
			t.Errorf("SNAPSHOT.md's %s lists columns\n  %v\nthe table has\n  %v", name, d, cols)
		}
	}
	for name := range doc {
		if _, ok := got[name]; !ok {
			t.Errorf("SNAPSHOT.md documents %s, which the pipeline does not publish", name)
		}
	}
}

// documentedColumns reads the "## Tables" part of SNAPSHOT.md: each "###
// <table>" section's column names, from the first cell of its table rows
// ("| `a`, `b` | ..." names two).
func documentedColumns(md string) map[string][]string {
	section := func(title string) string {
		_, s, _ := strings.Cut(md, "\n## "+title+"\n")
		s, _, _ = strings.Cut(s, "\n## ")
		return s
	}
	tables := section("Tables") + "\n" + section("Internal tables")
	out := map[string][]string{}
	var cur string
	for _, line := range strings.Split(tables, "\n") {
		if name, ok := strings.CutPrefix(line, "### "); ok {
			cur = strings.TrimSpace(name)
			out[cur] = nil
			continue
		}
		if cur == "" || !strings.HasPrefix(line, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, c := range strings.Split(cell, ",") {
			out[cur] = append(out[cur], strings.Trim(strings.TrimSpace(c), "`"))
		}
	}
	return out
}

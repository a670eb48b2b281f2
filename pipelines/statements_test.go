package pipelines

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/marcboeker/go-duckdb/v2"
)

// testDB is an in-memory DuckDB on one connection (a run's settings and
// attachments are per connection), closed with the test.
func testDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	return db
}

func TestExecStatementsSplitsAndNamesTheFailingStatement(t *testing.T) {
	db := testDB(t)
	var logs bytes.Buffer
	r := &run{o: Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, rep: &Report{RunID: "test"}, db: db}
	script := `-- a header comment; with a semicolon inside
CREATE TABLE a AS SELECT 1 AS x;
-- the next statement spans lines
CREATE TABLE b AS
SELECT x + 1 AS y
FROM a;
INSERT INTO b VALUES (';'); -- a string literal with a semicolon, not at the line end
`
	if err := r.execStatements(context.Background(), "t.sql", script); err == nil {
		t.Fatal("inserting a string into an integer column should fail")
	} else if !strings.Contains(err.Error(), "t.sql") || !strings.Contains(err.Error(), "INSERT INTO b") {
		t.Fatalf("the error should name the file and the statement: %v", err)
	}
	var y int
	if err := db.QueryRow(`SELECT y FROM b`).Scan(&y); err != nil || y != 2 {
		t.Fatalf("statements before the failing one ran: y=%d %v", y, err)
	}
	if err := r.execStatements(context.Background(), "t.sql", "-- only a comment;\n"); err != nil {
		t.Fatalf("a comment-only script: %v", err)
	}
}

// Every file under sql/ is run: those of the folders run in name order
// (normalise, derive, assemble) by execFolder, every other one by its name
// in this package's Go files. A file left behind by a rename (or never
// wired in) fails here, as a name without a file fails when the step runs.
func TestEverySQLFileIsRun(t *testing.T) {
	var src strings.Builder
	gofiles, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range gofiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	ordered := map[string]bool{"normalise": true, "derive": true, "assemble": true}
	files, err := filepath.Glob("../sql/*/*")
	if err != nil || len(files) < 20 {
		t.Fatalf("sql files: %d, %v", len(files), err)
	}
	for _, f := range files {
		name := strings.TrimPrefix(filepath.ToSlash(f), "../sql/")
		folder, _, _ := strings.Cut(name, "/")
		if ordered[folder] || !(strings.HasSuffix(name, ".sql") || strings.HasSuffix(name, ".tmpl")) {
			continue
		}
		if !strings.Contains(src.String(), `"`+name+`"`) {
			t.Errorf("sql/%s is not run by name", name)
		}
	}
}

func TestByteSize(t *testing.T) {
	for v, want := range map[string]int64{"3GB": 3e9, "512MiB": 512 << 20, "2.5 GB": 2.5e9, "1TB": 1e12, "100KB": 1e5,
		"": 0, "GB": 0, "3 parsecs": 0, "12": 0} {
		if got := byteSize(v); got != want {
			t.Errorf("byteSize(%q) = %d, want %d", v, got, want)
		}
	}
}

// releaseCache drops the blocks of a database file DuckDB keeps cached,
// keeps the in-memory tables a tick still needs, and puts the budget back.
func TestReleaseCacheDropsFileBlocks(t *testing.T) {
	db := testDB(t)
	ctx := context.Background()
	for _, q := range []string{
		`ATTACH '` + t.TempDir() + `/st.duckdb' AS st`,
		`CREATE TABLE st.big AS SELECT i, md5(CAST(i AS VARCHAR)) AS h FROM range(2000000) t(i)`,
		`CHECKPOINT st`,
		`CREATE TABLE kept AS SELECT i FROM range(1000000) t(i)`,
		`SET memory_limit = '512MB'`,
		`SELECT count(DISTINCT h) FROM st.big`, // reads every block of the file
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	usage := func(tag string) (n int64) {
		t.Helper()
		if err := db.QueryRow(`SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = ?`, tag).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	cached, inMemory := usage("BASE_TABLE"), usage("IN_MEMORY_TABLE")
	if cached < 8<<20 || inMemory < 4<<20 {
		t.Fatalf("the setup should cache the file's blocks and hold an in-memory table: %d and %d bytes", cached, inMemory)
	}
	r := &run{o: Options{Logger: slog.Default()}, rep: &Report{RunID: "test"}, db: db, budget: budget{bytes: 512e6, goPrev: -1}}
	r.releaseCache(ctx)
	if after := usage("BASE_TABLE"); after > cached/4 {
		t.Errorf("cached blocks of the file: %d bytes before, %d after", cached, after)
	}
	if after := usage("IN_MEMORY_TABLE"); after < inMemory {
		t.Errorf("the in-memory table was evicted: %d bytes before, %d after", inMemory, after)
	}
	var limit string
	if err := db.QueryRow(`SELECT current_setting('memory_limit')`).Scan(&limit); err != nil {
		t.Fatal(err)
	}
	if got := byteSize(limit); got < 480e6 || got > 520e6 {
		t.Errorf("the budget should be back at 512 MB: %s", limit)
	}
	var n int64
	if err := db.QueryRow(`SELECT count(*) FROM st.big`).Scan(&n); err != nil || n != 2000000 {
		t.Fatalf("the file reads again: %d rows, %v", n, err)
	}
}

// Every predicate the steps name is in sql/scope/predicates.sql.
func TestScopePredicates(t *testing.T) {
	for _, kind := range []string{"id", "match", "odds", "upstream_id", "upstream_match", "upstream_odds", "all",
		"touched_teams", "touched_players"} {
		if q := scopeRows(kind); q == "" || strings.Contains(q, "{{") {
			t.Errorf("%s: %q", kind, q)
		}
	}
	if q := scopeRows("parts_chunk", 3); !strings.HasSuffix(q, "chunk = 3)") {
		t.Errorf("parts_chunk: %q", q)
	}
}

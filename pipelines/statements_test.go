package pipelines

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"os"
	"strings"
	"testing"

	_ "github.com/marcboeker/go-duckdb/v2"

	eosql "github.com/eodata/eo/sql"
)

func TestExecStatementsSplitsAndNamesTheFailingStatement(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
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

// Every statement file under sql/changes, sql/model and sql/registries is
// read by name in sqlfiles.go: a file left behind by a rename (or never wired
// in) fails here, as a name without a file fails MustFile when the package
// starts.
func TestEveryStatementFileIsRead(t *testing.T) {
	src, err := os.ReadFile("sqlfiles.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, folder := range []string{"changes", "model", "registries"} {
		steps, err := eosql.Steps(folder)
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) == 0 {
			t.Fatalf("sql/%s holds no statement", folder)
		}
		for _, s := range steps {
			if !strings.Contains(string(src), `eosql.MustFile("`+s.Name+`")`) {
				t.Errorf("sql/%s is not read by sqlfiles.go", s.Name)
			}
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

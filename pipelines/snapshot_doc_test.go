package pipelines_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every table a snapshot publishes has its section in SNAPSHOT.md (a
// "### <table>" heading) and every column of its Parquet file a row of that
// section's column table: a table or column added to the
// pipeline without its documentation fails here.
func TestSnapshotDocCoversEveryTableAndColumn(t *testing.T) {
	doc, err := os.ReadFile("../SNAPSHOT.md")
	if err != nil {
		t.Fatal(err)
	}
	// sections: table -> the columns its column table names (a row's
	// first cell may name several: "| `maps_played`, `maps_won` |").
	sections := map[string]map[string]bool{}
	parts := regexp.MustCompile(`(?m)^### `).Split(string(doc), -1)
	name := regexp.MustCompile("`([a-z0-9_]+)`")
	for _, p := range parts[1:] {
		title, body, _ := strings.Cut(p, "\n")
		cols := map[string]bool{}
		for _, line := range strings.Split(body, "\n") {
			cells := strings.Split(line, "|")
			if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
				continue
			}
			for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
				cols[m[1]] = true
			}
		}
		sections[strings.Trim(strings.TrimSpace(title), "`")] = cols
	}
	rep, db := fixtureRun(t)
	if len(rep.Tables) < 25 {
		t.Fatalf("the run published %d tables", len(rep.Tables))
	}
	// The internal tables are documented under their own heading, and only
	// they are: a table moved out of the public snapshot says so.
	_, internalDoc, _ := strings.Cut(string(doc), "\n## Internal tables\n")
	internalDoc, _, _ = strings.Cut(internalDoc, "\n## ")
	for _, tf := range rep.Tables {
		cols, ok := sections[tf.Name]
		if !ok {
			t.Errorf("table %s: no \"### %s\" section in SNAPSHOT.md", tf.Name, tf.Name)
			continue
		}
		if documented := strings.Contains(internalDoc, "\n### "+tf.Name+"\n"); documented != tf.Internal {
			t.Errorf("table %s: internal %v, but SNAPSHOT.md documents it under Internal tables: %v", tf.Name, tf.Internal, documented)
		}
		rows, err := db.Query(fmt.Sprintf("SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet('%s'))", tf.Path))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var col string
			if err := rows.Scan(&col); err != nil {
				t.Fatal(err)
			}
			n++
			if !cols[col] {
				t.Errorf("table %s: column %s is not in its SNAPSHOT.md section", tf.Name, col)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if n == 0 {
			t.Errorf("table %s: DuckDB found no columns in %s", tf.Name, tf.Path)
		}
	}
}

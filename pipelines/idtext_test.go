package pipelines_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// Ids are published as canonical text (schema version 2), so a string
// filter on an id works in any Parquet reader, and a snapshot of schema
// version 1 (16-byte UUIDs) still loads: the same tables in either form
// load into the same rows and serve the same bytes.
func TestIDsAreTextAndSchemaOneStillLoads(t *testing.T) {
	rep, db := fixtureRun(t)
	v1 := t.TempDir()
	var names []string
	for _, tf := range rep.Tables {
		names = append(names, tf.Name)
		src := strings.ReplaceAll(tf.Path, "'", "''")
		// Every id column is text that filters as a string.
		var uuids int
		if err := db.QueryRow(fmt.Sprintf(`SELECT count(*) FROM (DESCRIBE SELECT * FROM read_parquet('%s'))
			WHERE column_type LIKE 'UUID%%'`, src)).Scan(&uuids); err != nil {
			t.Fatal(err)
		}
		if uuids > 0 && tf.Name != tables.MatchPartsTable {
			t.Errorf("table %s still has %d UUID columns", tf.Name, uuids)
		}
		// The same table as schema version 1 wrote it: ids as UUIDs.
		var casts []string
		rows, err := db.Query(fmt.Sprintf(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('%s'))`, src))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var col, typ string
			if err := rows.Scan(&col, &typ); err != nil {
				t.Fatal(err)
			}
			if typ == "VARCHAR" && col != "upstream_id" && (col == "id" || strings.HasSuffix(col, "_id")) || col == "player_ids" {
				casts = append(casts, fmt.Sprintf(`CAST("%s" AS %s) AS "%s"`, col, strings.Replace(typ, "VARCHAR", "UUID", 1), col))
			}
		}
		rows.Close()
		sel := "*"
		if len(casts) > 0 {
			sel = "* REPLACE (" + strings.Join(casts, ", ") + ")"
		}
		dst := strings.ReplaceAll(filepath.Join(v1, tf.Name+".parquet"), "'", "''")
		if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT %s FROM read_parquet('%s')) TO '%s' (FORMAT parquet)`, sel, src, dst)); err != nil {
			t.Fatal(err)
		}
	}
	if n := matchIDsOf(t, db, rep, "019"); n == 0 {
		t.Error("a string filter on matches.id found nothing")
	}
	load := func(dir string, version int) *view.Snapshot {
		s, err := view.Load(context.Background(), dir, view.Meta{ID: dir, Tables: names, SchemaVersion: version})
		if err != nil {
			t.Fatalf("schema version %d: %v", version, err)
		}
		return s
	}
	two, one := load(filepath.Dir(rep.Tables[0].Path), 2), load(v1, 1)
	if len(two.Matches()) == 0 || !reflect.DeepEqual(two.Matches(), one.Matches()) ||
		!reflect.DeepEqual(two.Teams(), one.Teams()) || !reflect.DeepEqual(two.Players(), one.Players()) ||
		!reflect.DeepEqual(two.Tournaments(), one.Tournaments()) {
		t.Fatal("the rows of the text-id snapshot differ from the UUID one's")
	}
	odds := func(s *view.Snapshot) string {
		var b bytes.Buffer
		s.OddsLinesJSON(func(l []byte) { b.Write(l) })
		return b.String()
	}
	if odds(two) != odds(one) {
		t.Error("odds lines differ")
	}
	vt, vo := view.New(two), view.New(one)
	now := time.Now()
	for _, m := range two.Matches() {
		a, _ := vt.AppendMatch(nil, m.ID, view.IncludeKeys, now)
		b, _ := vo.AppendMatch(nil, m.ID, view.IncludeKeys, now)
		if !bytes.Equal(a, b) {
			t.Fatalf("match %s serves differently:\n%s\n%s", m.ID, a, b)
		}
	}
	if up := two.Upstream(two.Matches()[0].ID); up == "" || up != one.Upstream(one.Matches()[0].ID) {
		t.Errorf("live_ids: upstream %q", up)
	}
}

// matchIDsOf counts the matches whose id starts with prefix, filtered as
// a string by DuckDB.
func matchIDsOf(t *testing.T, db *sql.DB, rep pipelines.Report, prefix string) int {
	t.Helper()
	for _, tf := range rep.Tables {
		if tf.Name == "matches" {
			var n int
			q := fmt.Sprintf(`SELECT count(*) FROM read_parquet('%s') WHERE starts_with(id, '%s')`, tf.Path, prefix)
			if err := db.QueryRow(q).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no matches table")
	return 0
}

package pipelines_test

import (
	"context"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
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
	checkDocFigures(t, string(doc), rep)
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

// checkDocFigures holds SNAPSHOT.md's figures to the pipeline: the versions
// the manifest is said to carry "currently", the count of public and of
// internal tables and the internal ones' names wherever the page gives
// them, and every object a publish writes under snapshots/ named in the
// layout. The page said pipeline 2.1.0 and 3 internal tables long after
// 2.4.0 published 4, and never named published.json.
func checkDocFigures(t *testing.T, doc string, rep pipelines.Report) {
	t.Helper()
	current := func(field string) string {
		m := regexp.MustCompile("(?m)^\\| `" + field + "` \\|[^\\n]*?currently `\"?([0-9.]+)\"?`").FindStringSubmatch(doc)
		if m == nil {
			t.Errorf("SNAPSHOT.md: the manifest's %s has no \"currently `…`\"", field)
			return ""
		}
		return m[1]
	}
	for field, want := range map[string]string{"pipeline_version": pipelines.Version,
		"schema_version": strconv.Itoa(pipelines.SchemaVersion), "raw_contract_version": strconv.Itoa(raw.ContractVersion)} {
		if got := current(field); got != want {
			t.Errorf("SNAPSHOT.md: %s is currently %q, the pipeline writes %q", field, got, want)
		}
	}
	var public, internal []string
	for _, tf := range rep.Tables {
		if tf.Internal {
			internal = append(internal, tf.Name)
		} else {
			public = append(public, tf.Name)
		}
	}
	slices.Sort(internal)
	names := func(list string) []string {
		out := regexp.MustCompile("[a-z_]+").FindAllString(list, -1)
		slices.Sort(out)
		return out
	}
	m := regexp.MustCompile(`publishes the (\d+) public tables documented below and (\d+)\s+internal ones \(([^;]+);`).FindStringSubmatch(doc)
	if m == nil || m[1] != strconv.Itoa(len(public)) || m[2] != strconv.Itoa(len(internal)) || !slices.Equal(names(m[3]), internal) {
		t.Errorf("SNAPSHOT.md: \"publishes the N public tables … and M internal ones (…)\" says %q; the pipeline publishes %d public and %d internal %v",
			m, len(public), len(internal), internal)
	}
	if m := regexp.MustCompile(`The (\d+) internal tables are for the edge`).FindStringSubmatch(doc); m == nil || m[1] != strconv.Itoa(len(internal)) {
		t.Errorf("SNAPSHOT.md, Internal tables: %q; the pipeline publishes %d", m, len(internal))
	}
	_, layout, _ := strings.Cut(doc, "## Layout in the store")
	layout, _, _ = strings.Cut(layout, "\n## ")
	if m := regexp.MustCompile(`internal tables \(([^)]+)\)`).FindStringSubmatch(layout); m == nil || !slices.Equal(names(m[1]), internal) {
		t.Errorf("SNAPSHOT.md, Layout: the internal tables are %q; the pipeline publishes %v", m, internal)
	}
	// Every object a publish writes under snapshots/, by file name, is in
	// the layout (the tables as <table>.parquet).
	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := publish.Publish(ctx, st, publish.Manifest{CreatedAt: time.Now(), SchemaVersion: pipelines.SchemaVersion,
		PipelineVersion: pipelines.Version}, rep.Tables); err != nil {
		t.Fatal(err)
	}
	objs, err := st.List(ctx, "snapshots/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		name := path.Base(o.Key)
		if strings.HasSuffix(name, ".parquet") {
			continue
		}
		if !strings.Contains(layout, "/"+name+" ") {
			t.Errorf("SNAPSHOT.md, Layout: a publish writes %s, the layout does not name %s", o.Key, name)
		}
	}
	if len(objs) < len(rep.Tables)+3 {
		t.Errorf("the publish wrote %d objects", len(objs))
	}
}

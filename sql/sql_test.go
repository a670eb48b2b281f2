package sql

import (
	"strings"
	"testing"
	"text/template"
)

// A file read by a name that has none fails naming the file; a template
// error names the file too.
func TestRenderNamesWhatIsMissing(t *testing.T) {
	got, err := Render("run/count.sql", "some_table", nil)
	if err != nil || strings.TrimSpace(got) != "SELECT count(*) FROM some_table;" {
		t.Fatalf("run/count.sql: %q, %v", got, err)
	}
	if _, err := Render("run/no_such.sql", nil, nil); err == nil || !strings.Contains(err.Error(), "run/no_such.sql") {
		t.Fatalf("a missing file: %v", err)
	}
	// merge/ensure.sql needs .Table and .Src: missing keys fail the render.
	if _, err := Render("merge/ensure.sql", map[string]string{"Table": "t"}, nil); err == nil ||
		!strings.Contains(err.Error(), "merge/ensure.sql") {
		t.Fatalf("a missing template key: %v", err)
	}
	if _, err := Render("check/01_check.sql", nil, template.FuncMap{}); err == nil {
		t.Fatal("check/01_check.sql needs its spec function")
	}
}

func TestQuote(t *testing.T) {
	if got := Quote("it's"); got != "'it''s'" {
		t.Fatalf("Quote: %s", got)
	}
}

func TestStepsAreInNameOrder(t *testing.T) {
	if _, err := Steps("no_such_folder"); err == nil || !strings.Contains(err.Error(), "no_such_folder") {
		t.Fatalf("Steps of a missing folder: %v", err)
	}
	steps, err := Steps("derive")
	if err != nil || len(steps) == 0 {
		t.Fatalf("Steps(derive): %d steps, %v", len(steps), err)
	}
	for i := 1; i < len(steps); i++ {
		if steps[i-1].Name >= steps[i].Name {
			t.Fatalf("steps out of name order: %s before %s", steps[i-1].Name, steps[i].Name)
		}
	}
}

package sql

import (
	"fmt"
	"strings"
	"testing"
)

// A statement read by a name that has no file stops with an error naming the
// file (MustFile runs when the reading package initialises, so every test of
// that package fails with it).
func TestMustFileNamesAMissingFile(t *testing.T) {
	if got := MustFile("model/rankings.sql"); !strings.Contains(got, "rankings") {
		t.Fatalf("model/rankings.sql: %q", got)
	}
	msg := func() (msg string) {
		defer func() { msg = fmt.Sprint(recover()) }()
		MustFile("model/no_such_statement.sql")
		return "no panic"
	}()
	if !strings.Contains(msg, "sql: model/no_such_statement.sql") || !strings.Contains(msg, "does not exist") {
		t.Fatalf("MustFile of a missing name: %s", msg)
	}
}

func TestStepsAndTemplateNameWhatIsMissing(t *testing.T) {
	if _, err := Steps("no_such_folder"); err == nil || !strings.Contains(err.Error(), "no_such_folder") {
		t.Fatalf("Steps of a missing folder: %v", err)
	}
	if _, err := Template("stage/no_such.tmpl"); err == nil || !strings.Contains(err.Error(), "stage/no_such.tmpl") {
		t.Fatalf("Template of a missing file: %v", err)
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

package pipelines_test

// Reliability of raw ingestion: a bad line, file, batch or correction is
// quarantined with its reason and never takes good data (or later runs) down
// with it.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
)

// quarantineLines returns the run's quarantine file, one decoded line each.
func quarantineLines(t *testing.T, st publish.Store, rep pipelines.Report) []map[string]any {
	t.Helper()
	body, err := publish.GetBytes(context.Background(), st, pipelines.QuarantinePrefix+rep.RunID+".ndjson")
	if err != nil {
		t.Fatalf("quarantine file of run %s: %v", rep.RunID, err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("quarantine line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func wantQuarantined(t *testing.T, rep pipelines.Report, entity, reason string, n int) {
	t.Helper()
	if got := rep.Quarantined[entity][reason]; got != n {
		t.Errorf("quarantined %s/%q: %d, want %d (all: %v)", entity, reason, got, n, rep.Quarantined)
	}
}

// A line over the line cap is quarantined on its own; the lines after it in
// the same file land.
func TestOverlongLineIsQuarantinedAndTheRestOfTheFileLands(t *testing.T) {
	const maxLine = 64 << 20 // raw.MaxLineBytes
	// two-byte runes: the kept prefix ends inside one
	long := `{"id":"tm-9","name":"` + strings.Repeat("é", maxLine/2) + `","changed_at":"2025-03-01T10:00:00Z"}`
	st := publish.NewMemory()
	landDir(t, st, "testdata/fixture", landedAt, map[raw.Entity][]string{raw.Teams: {long,
		`{"id":"tm-7","name":"After One","changed_at":"2025-03-01T10:00:00Z"}`,
		`{"id":"tm-8","name":"After Two","changed_at":"2025-03-01T10:00:00Z"}`,
		`{"id":"tm-9","name":"After Three","changed_at":"2025-03-01T10:00:00Z"}`,
	}})
	rep := runPipeline(t, st)
	wantQuarantined(t, rep, "teams", fmt.Sprintf("line longer than %d bytes", maxLine), 1)
	if rep.QuarantinedTotal() != 1 {
		t.Errorf("quarantined: %v", rep.Quarantined)
	}
	teams := dump(t, rep)["teams"]
	for _, s := range []string{"after-one", "after-two", "after-three"} {
		if !strings.Contains(teams, s) {
			t.Errorf("%s, after the over-long line, did not land:\n%s", s, teams)
		}
	}
	for _, q := range quarantineLines(t, st, rep) {
		if b := fmt.Sprint(q["body"]); len(b) > 64<<10 || !strings.HasPrefix(b, `{"id":"tm-9","name":"ééé`) {
			t.Errorf("the quarantined over-long line keeps a short prefix, got %d bytes: %.80s", len(b), b)
		}
	}
}

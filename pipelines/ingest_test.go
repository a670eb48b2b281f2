package pipelines_test

// Reliability of raw ingestion: a bad line, file, batch or correction is
// quarantined with its reason and never takes good data (or later runs) down
// with it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// quarantineLines returns the run's quarantine file, one decoded line each.
func quarantineLines(t *testing.T, st store.Store, rep pipelines.Report) []map[string]any {
	t.Helper()
	body, err := store.GetBytes(context.Background(), st, pipelines.QuarantinePrefix+rep.RunID+".ndjson")
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

// runReport returns the run report the run saved in the store, decoded.
func runReport(t *testing.T, st store.Store, rep pipelines.Report) map[string]any {
	t.Helper()
	body, err := store.GetBytes(context.Background(), st, pipelines.RunsPrefix+rep.RunID+".json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// cleanTables is every table of a run on the fixture alone.
func cleanTables(t *testing.T) map[string]string {
	t.Helper()
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
	return dump(t, runPipeline(t, st))
}

// sameTables fails for every table that differs from the clean fixture's.
func sameTables(t *testing.T, want, got map[string]string) {
	t.Helper()
	for name, w := range want {
		if got[name] == w {
			continue
		}
		wl, gl := strings.Split(w, "\n"), strings.Split(got[name], "\n")
		i := 0
		for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
			i++
		}
		first := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end)"
		}
		t.Errorf("table %s differs from the clean fixture's (%d rows, want %d); first difference:\n  want %.200s\n  got  %.200s",
			name, len(gl)-2, len(wl)-2, first(wl), first(gl))
	}
}

func wantQuarantined(t *testing.T, rep pipelines.Report, entity, reason string, n int) {
	t.Helper()
	if got := rep.Quarantined[entity][reason]; got != n {
		t.Errorf("quarantined %s/%q: %d, want %d (all: %v)", entity, reason, got, n, rep.Quarantined)
	}
}

// A correction that fails a reference or plausibility check must not
// replace the record it corrects: the older valid version stays published
// with every row that hangs off it, and the correction is quarantined.
func TestRejectedCorrectionDoesNotDeleteTheGoodRecordOrItsChildren(t *testing.T) {
	clean := cleanTables(t)
	cases := []struct {
		name           string
		e              raw.Entity
		line           string
		entity, reason string
	}{
		{"player correction with an unknown team_id", raw.Players,
			`{"id":"pl-11","nickname":"nick11","real_name":"Real Name 11","nationality":"Germany","country_code":"DE","role":"AWP","team_id":"tm-404","changed_at":"2025-03-10T06:00:00Z"}`,
			"players", "unknown team_id"},
		{"match correction with an unknown team_b_id", raw.Matches,
			`{"id":"m-1","tournament_id":"tr-1","team_a_id":"tm-1","team_b_id":"tm-404","format":"bo3","stage":"Semi-final","scheduled_at":"2025-03-02T15:00:00Z","changed_at":"2025-03-10T06:00:00Z"}`,
			"matches", "unknown team_b_id"},
		{"map result correction with a 13-13 score", raw.MapResults,
			`{"match_id":"m-1","map_number":1,"map_name":"de_mirage","score_a":13,"score_b":13,"first_half_side_a":"ct","changed_at":"2025-03-10T06:00:00Z"}`,
			"map_results", "impossible score"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := store.NewMemory()
			worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
			worldtest.LandDir(t, st, t.TempDir(), landedAt.Add(24*time.Hour), map[raw.Entity][]string{c.e: {c.line}})
			rep := runPipeline(t, st)
			wantQuarantined(t, rep, c.entity, c.reason, 1)
			if rep.QuarantinedTotal() != 1 {
				t.Errorf("only the correction should be quarantined: %v", rep.Quarantined)
			}
			sameTables(t, clean, dump(t, rep))
			var found bool
			for _, q := range quarantineLines(t, st, rep) {
				found = found || (q["entity"] == c.entity && q["reason"] == c.reason && q["body"] == c.line)
			}
			if !found {
				t.Errorf("the rejected correction is not in the quarantine file with its reason and body")
			}
		})
	}
}

// Team-level kills on a match update (optional) come on both sides or
// neither, are not negative, and only once the match is live or completed:
// an update breaking that is quarantined and changes nothing published.
func TestImpossibleTeamKillsAreQuarantined(t *testing.T) {
	clean := cleanTables(t)
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
	worldtest.LandDir(t, st, t.TempDir(), landedAt.Add(24*time.Hour), map[raw.Entity][]string{raw.MatchUpdates: {
		`{"match_id":"m-1","status":"completed","score_a":2,"score_b":0,"result_type":"played","kills_a":-1,"kills_b":30,"changed_at":"2025-03-02T17:00:01Z"}`,
		`{"match_id":"m-1","status":"completed","score_a":2,"score_b":0,"result_type":"played","kills_a":40,"changed_at":"2025-03-02T17:00:02Z"}`,
		`{"match_id":"m-1","status":"scheduled","kills_a":0,"kills_b":0,"changed_at":"2025-03-01T10:00:01Z"}`,
		`{"match_id":"m-1","status":"completed","score_a":3,"score_b":0,"result_type":"played","kills_a":40,"kills_b":30,"changed_at":"2025-03-02T17:00:03Z"}`,
	}})
	rep := runPipeline(t, st)
	wantQuarantined(t, rep, "match_updates", "impossible kills", 3)
	wantQuarantined(t, rep, "match_updates", "impossible score", 1) // the score is named first
	if rep.QuarantinedTotal() != 4 {
		t.Errorf("quarantined %v", rep.Quarantined)
	}
	sameTables(t, clean, dump(t, rep))
}

// A duel names two players; one whose opponent is unknown used to vanish in
// normalise's join. It is quarantined like any broken reference.
func TestDuelWithUnknownOpponentIsQuarantined(t *testing.T) {
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, map[raw.Entity][]string{raw.DepthDuels: {
		`{"match_id":"m-1","map_number":1,"player_id":"pl-11","opponent_id":"pl-404","kills":1,"deaths":0,"changed_at":"2025-03-02T17:00:00Z"}`}})
	rep := runPipeline(t, st)
	wantQuarantined(t, rep, "depth_duels", "unknown opponent_id", 1)
}

// A line DuckDB cannot take (invalid UTF-8; a lone surrogate escape, which
// Go's JSON accepts and DuckDB's does not) is quarantined; the run and the
// rest of the file go on.
func TestUnparseableLineIsQuarantinedNotFatal(t *testing.T) {
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, map[raw.Entity][]string{raw.Teams: {
		"{\"id\":\"tm-9\",\"name\":\"Bad \xff\xfe name\",\"changed_at\":\"2025-03-01T10:00:00Z\"}",
		`{"id":"tm-8","name":"Eight \ud800","changed_at":"2025-03-01T10:00:00Z"}`,
		"{\"id\":\"tm-6\",\"name\":\"NUL \x00 byte\",\"changed_at\":\"2025-03-01T10:00:00Z\"}",
		`{"id":"tm-7","name":"Seventh Heaven","changed_at":"2025-03-01T10:00:00Z"}`,
	}})
	rep, err := pipelines.Run(context.Background(), pipelines.Options{Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatalf("one bad line failed the whole run: %v", err)
	}
	wantQuarantined(t, rep, "teams", "invalid UTF-8", 1)
	wantQuarantined(t, rep, "teams", "malformed JSON", 2)
	if !strings.Contains(dump(t, rep)["teams"], "seventh-heaven") {
		t.Error("the good line after the bad ones did not land")
	}
	var bodies []string
	for _, q := range quarantineLines(t, st, rep) {
		bodies = append(bodies, fmt.Sprint(q["body"]))
	}
	if all := strings.Join(bodies, "\n"); !strings.Contains(all, `Bad \xff\xfe name`) || !strings.Contains(all, `Eight \ud800`) {
		t.Errorf("the quarantine keeps the bad lines (invalid bytes as \\xNN):\n%s", all)
	}
}

// overwrite replaces a landed object.
func overwrite(t *testing.T, st store.Store, key string, body []byte) {
	t.Helper()
	if err := store.PutBytes(context.Background(), st, key, body); err != nil {
		t.Fatal(err)
	}
}

// A batch whose _batch.json cannot be trusted is skipped and reported (run
// report, quarantine, log); the other batches are published.
func TestBadBatchManifestIsSkippedNotFatal(t *testing.T) {
	clean := cleanTables(t)
	later := landedAt.Add(24 * time.Hour)
	cases := []struct {
		name, reason string
		manifest     func(id string) string
	}{
		{"malformed JSON", "malformed _batch.json", func(id string) string { return `{"batch_id":"` + id + `",` }},
		{"missing batch_id", "missing batch_id", func(id string) string {
			return `{"contract_version":1,"source":"x","landed_at":"2025-03-11T00:00:00Z","files":{"teams":1}}`
		}},
		{"missing landed_at", "missing landed_at", func(id string) string {
			return `{"batch_id":"` + id + `","contract_version":1,"source":"x","files":{"teams":1}}`
		}},
		{"missing files", "missing files", func(id string) string {
			return `{"batch_id":"` + id + `","contract_version":1,"source":"x","landed_at":"2025-03-11T00:00:00Z"}`
		}},
		{"newer contract version", "unsupported contract_version", func(id string) string {
			return `{"batch_id":"` + id + `","contract_version":2,"source":"x","landed_at":"2025-03-11T00:00:00Z","files":{"teams":1}}`
		}},
		{"batch_id of another folder", "batch_id does not match its folder", func(id string) string {
			return `{"batch_id":"20250311T000000.000Z-abcdef","contract_version":1,"source":"x","landed_at":"2025-03-11T00:00:00Z","files":{"teams":1}}`
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := store.NewMemory()
			worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
			bad := worldtest.LandDir(t, st, t.TempDir(), later, map[raw.Entity][]string{raw.Teams: {
				`{"id":"tm-1","name":"Should Not Land","changed_at":"2025-03-10T12:00:00Z"}`}})
			overwrite(t, st, raw.BatchesPrefix+bad+"/"+raw.BatchManifestName, []byte(c.manifest(bad)))
			var logs bytes.Buffer
			rep, err := pipelines.Run(context.Background(), pipelines.Options{Store: st, WorkDir: t.TempDir(),
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatalf("a bad _batch.json failed the run: %v", err)
			}
			sameTables(t, clean, dump(t, rep))
			wantQuarantined(t, rep, "_batch", c.reason, 1)
			// the run report names the skipped batch and why
			skipped, _ := runReport(t, st, rep)["skipped_batches"].([]any)
			if len(skipped) != 1 || skipped[0].(map[string]any)["batch_id"] != bad || skipped[0].(map[string]any)["reason"] != c.reason {
				t.Errorf("run report skipped_batches = %v, want %s: %s", skipped, bad, c.reason)
			}
			var found bool
			for _, q := range quarantineLines(t, st, rep) {
				found = found || (q["batch_id"] == bad && q["entity"] == "_batch" && q["reason"] == c.reason)
			}
			if !found {
				t.Error("the quarantine file lacks the skipped batch")
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), bad) {
				t.Errorf("no warning names the skipped batch:\n%s", logs.String())
			}
		})
	}
}

// A file listed in _batch.json but absent is quarantined; the batch's other
// files land (local store: read in place; memory store: copied to a cache).
func TestListedFileMissingIsQuarantinedAndTheBatchLands(t *testing.T) {
	for name, st := range map[string]store.Store{"memory": store.NewMemory(), "local": must(store.NewLocal(t.TempDir()))} {
		t.Run(name, func(t *testing.T) {
			worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
			id := worldtest.LandDir(t, st, t.TempDir(), landedAt.Add(24*time.Hour), map[raw.Entity][]string{raw.Teams: {
				`{"id":"tm-7","name":"Late Arrivals","changed_at":"2025-03-10T12:00:00Z"}`}})
			overwrite(t, st, raw.BatchesPrefix+id+"/"+raw.BatchManifestName, []byte(`{"batch_id":"`+id+`",`+
				`"contract_version":1,"source":"x","landed_at":"2025-03-11T00:00:00Z","files":{"teams":1,"players":3}}`))
			rep := runPipeline(t, st)
			wantQuarantined(t, rep, "players", "file missing", 1)
			if !strings.Contains(dump(t, rep)["teams"], "late-arrivals") {
				t.Error("the batch's present file did not land")
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// batch_id comes from a file in the store: it must never be used as a path.
// One that climbs out of the batches folder skips the batch; nothing outside
// the store is read.
func TestBatchIDIsNotUsedAsAPath(t *testing.T) {
	dir := t.TempDir()
	st, err := store.NewLocal(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "teams.ndjson"),
		[]byte(`{"id":"tm-1","name":"From Outside","changed_at":"2025-03-10T12:00:00Z"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
	folder := raw.NewBatchID(landedAt.Add(time.Hour))
	overwrite(t, st, raw.BatchesPrefix+folder+"/"+raw.BatchManifestName, []byte(`{"batch_id":"../../../../outside",`+
		`"contract_version":1,"source":"x","landed_at":"2025-03-10T01:00:00Z","files":{"teams":1}}`))
	rep, err := pipelines.Run(context.Background(), pipelines.Options{Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if teams := dump(t, rep)["teams"]; strings.Contains(teams, "From Outside") {
		t.Fatalf("a file outside the store was published:\n%s", teams)
	}
	wantQuarantined(t, rep, "_batch", "invalid batch_id", 1)
	skipped, _ := runReport(t, st, rep)["skipped_batches"].([]any)
	if len(skipped) != 1 || skipped[0].(map[string]any)["batch_id"] != folder {
		t.Errorf("run report skipped_batches = %v, want the folder %s", skipped, folder)
	}
}

// An entity name in _batch.json is not trusted as a path either: a file of
// an entity the contract does not have is never read or copied, and is
// quarantined; the run goes on.
func TestUnknownEntityFileIsNotReadAndIsQuarantined(t *testing.T) {
	st := store.NewMemory()
	id := worldtest.LandDir(t, st, "testdata/fixture", landedAt, nil)
	ctx := context.Background()
	if err := store.PutBytes(ctx, st, raw.BatchesPrefix+id+"/coaches.ndjson", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	overwrite(t, st, raw.BatchesPrefix+id+"/"+raw.BatchManifestName, []byte(`{"batch_id":"`+id+`",`+
		`"contract_version":1,"source":"x","landed_at":"2025-03-10T00:00:00Z","files":{"teams":4,"coaches":1,"../../escape":1}}`))
	work := t.TempDir()
	rep, err := pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: work})
	if err != nil {
		t.Fatalf("an unknown entity in _batch.json failed the run: %v", err)
	}
	wantQuarantined(t, rep, "coaches", "unknown entity", 1)
	wantQuarantined(t, rep, "../../escape", "unknown entity", 1)
	if _, err := os.Stat(filepath.Join(work, "raw-cache", id, "coaches.ndjson")); err == nil {
		t.Error("a file of an unknown entity was copied")
	}
}

// A line over the line cap is quarantined on its own; the lines after it in
// the same file land.
func TestOverlongLineIsQuarantinedAndTheRestOfTheFileLands(t *testing.T) {
	const maxLine = 64 << 20 // raw.MaxLineBytes
	// two-byte runes: the kept prefix ends inside one
	long := `{"id":"tm-9","name":"` + strings.Repeat("é", maxLine/2) + `","changed_at":"2025-03-01T10:00:00Z"}`
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, map[raw.Entity][]string{raw.Teams: {long,
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

// A change time far in the future would win last-write-wins over every real
// correction forever; it is quarantined instead.
func TestFutureChangeTimeDoesNotWinOverLaterCorrections(t *testing.T) {
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, map[raw.Entity][]string{
		raw.Teams: {`{"id":"tm-1","name":"Alpha Forever","changed_at":"2099-01-01T00:00:00Z"}`},
		raw.PriceCaptures: {`{"book":"bk-1","market":"match_winner","match_id":"m-1","outcome":"home","price":1.5,` +
			`"captured_at":"2099-01-01T00:00:00Z"}`},
		raw.Lineups: {`{"match_id":"m-1","team_id":"tm-1","player_ids":["pl-11"],"captured_at":"2099-01-01T00:00:00Z",` +
			`"changed_at":"2025-03-09T10:00:00Z"}`},
	})
	worldtest.LandDir(t, st, t.TempDir(), landedAt.Add(24*time.Hour), map[raw.Entity][]string{raw.Teams: {
		`{"id":"tm-1","name":"Alpha Pack","short_name":"AP","region":"Europe","country_code":"DE","external_rank":3,"changed_at":"2025-03-10T12:00:00Z"}`}})
	rep := runPipeline(t, st)
	teams := dump(t, rep)["teams"]
	if !strings.Contains(teams, "alpha-pack") || strings.Contains(teams, "alpha-forever") {
		t.Errorf("the real correction must win over a 2099 change time:\n%s", teams)
	}
	if names := dump(t, rep)["team_names"]; strings.Contains(names, "Alpha Forever") {
		t.Errorf("a rejected name is not a name the team carried:\n%s", names)
	}
	wantQuarantined(t, rep, "teams", "changed_at too far in the future", 1)
	wantQuarantined(t, rep, "price_captures", "captured_at too far in the future", 1)
	wantQuarantined(t, rep, "lineups", "captured_at too far in the future", 1)
	if rep.QuarantinedTotal() != 3 {
		t.Errorf("quarantined: %v", rep.Quarantined)
	}
}

// A value of the wrong JSON type, an integer outside its column's range and
// a text longer than its field's limit are rejected with the field named.
func TestWrongJSONTypeOutOfRangeAndOversizedValuesAreRejected(t *testing.T) {
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, map[raw.Entity][]string{
		raw.Teams: {
			`{"id":"tm-20","name":123,"changed_at":"2025-03-01T10:00:00Z"}`,
			`{"id":"tm-21","name":"Twenty One","external_rank":"5","changed_at":"2025-03-01T10:00:00Z"}`,
			`{"id":"tm-22","name":"Twenty Two","external_rank":99999999999,"changed_at":"2025-03-01T10:00:00Z"}`,
			`{"id":"tm-23","name":"` + strings.Repeat("Long", 1<<18) + `","changed_at":"2025-03-01T10:00:00Z"}`,
			`{"id":"tm-24","name":"Twenty Four","external_rank":5.0,"changed_at":"2025-03-01T10:00:00Z"}`,
			`{"id":"tm-25","name":["x"],"changed_at":"2025-03-01T10:00:00Z"}`,
		},
		raw.Tournaments: {
			`{"id":"tr-20","name":"Stringly Cup","is_lan":"true","changed_at":"2025-03-01T10:00:00Z"}`,
			`{"id":"tr-21","name":"Float Cup","prize_pool_usd":1.5,"changed_at":"2025-03-01T10:00:00Z"}`,
			`{"id":"tr-22","name":"Late Cup","changed_at":12345}`,
		},
		raw.PriceCaptures: {`{"book":"bk-1","market":"match_winner","match_id":"m-1","outcome":"home","price":"1.5",` +
			`"captured_at":"2025-03-01T12:00:00Z"}`},
	})
	rep := runPipeline(t, st)
	for _, w := range []struct{ e, reason string }{
		{"teams", "invalid name"}, {"teams", "invalid external_rank"}, {"teams", "name too long"},
		{"tournaments", "invalid is_lan"}, {"tournaments", "invalid prize_pool_usd"}, {"tournaments", "invalid changed_at"},
		{"price_captures", "invalid price"},
	} {
		if rep.Quarantined[w.e][w.reason] == 0 {
			t.Errorf("%s: no line quarantined as %q (all: %v)", w.e, w.reason, rep.Quarantined)
		}
	}
	wantQuarantined(t, rep, "teams", "invalid name", 2)
	wantQuarantined(t, rep, "teams", "invalid external_rank", 3)
	if rep.QuarantinedTotal() != 10 {
		t.Errorf("quarantined %d lines, want 10: %v", rep.QuarantinedTotal(), rep.Quarantined)
	}
	tables := dump(t, rep)
	for _, s := range []string{"Twenty", "LongLong", "Stringly", "Float Cup", "Late Cup", "| 123 |"} {
		if strings.Contains(tables["teams"]+tables["tournaments"], s) {
			t.Errorf("a rejected record was published: %s", s)
		}
	}
}

// Slugs come from names: however a name expands, the slug is bounded, so
// every published entity can be requested by its slug.
func TestSlugIsBounded(t *testing.T) {
	const max = pipelines.MaxSlugLen
	for _, name := range []string{strings.Repeat("ab ", 1000), strings.Repeat("x", 500), strings.Repeat("㎏", 100), strings.Repeat("ⅷ", 100)} {
		if s := pipelines.Slugify(name); len(s) > max || s == "" || strings.HasSuffix(s, "-") {
			t.Errorf("Slugify(%.20q…) = %d bytes %.30q…, want 1..%d without a trailing hyphen", name, len(s), s, max)
		}
	}
}

// A raw line naming a field twice is quarantined ("duplicate key"): neither
// value is published (parsers disagree on which one counts).
func TestDuplicateKeyIsQuarantined(t *testing.T) {
	st := store.NewMemory()
	worldtest.LandDir(t, st, "testdata/fixture", landedAt, map[raw.Entity][]string{raw.Teams: {
		`{"id":"tm-5","name":"Dup","name":"Dup Two","changed_at":"2025-03-01T10:00:00Z"}`,
	}})
	rep, err := pipelines.Run(context.Background(), pipelines.Options{Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	wantQuarantined(t, rep, "teams", "duplicate key", 1)
	if teams := dump(t, rep)["teams"]; strings.Contains(teams, "Dup") {
		t.Errorf("a team of the duplicate-key line was published:\n%s", teams)
	}
}

package edge

import (
	"bufio"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/eodata/eo/raw"
)

// TestPagingAcrossChangedSwap: between a client's pages a new snapshot is
// swapped in in which a match of a later page was rescheduled to the top of
// the list. The walk goes on in the new snapshot by key: every row whose
// sort value did not change is seen exactly once and in order, the moved
// one (now before the cursor) is not seen again, and the first page after
// the swap says the walk continued (X-Cursor-Continued); the pages after it
// do not. A list in an order the swap did not touch (teams by name) walks
// through it unchanged; a cursor used under another sort is refused. The
// replaced snapshot is not kept for the cursors minted on it: it is
// collected while they are in use.
func TestPagingAcrossChangedSwap(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	const list, teams = "/v1/cs2/matches?limit=9", "/v1/cs2/teams?limit=4"
	want, wantTeams := pageAll(t, ts, list), pageAll(t, ts, teams)
	if len(want) < 30 || len(wantTeams) < 10 {
		t.Fatalf("fixture too small: %d matches, %d teams", len(want), len(wantTeams))
	}
	first := func(path string) ([]string, string) {
		r := ts.get(t, path)
		var ids []string
		for _, row := range r.data(t) {
			ids = append(ids, row.(map[string]any)["id"].(string))
		}
		return ids, r.json(t)["meta"].(map[string]any)["next_cursor"].(string)
	}
	got, next := first(list)
	gotTeams, nextTeams := first(teams)
	replaced := weak.Make(ts.Current())

	// Reschedule the match at position 20 (page 3) after every other.
	moved, _ := ParseID(want[20])
	up := ts.Current().Upstream(moved)
	if up == "" {
		t.Fatal("no upstream id for the match")
	}
	rec := findRawMatch(t, ts.store.LocalPath("raw"), up)
	rec.ScheduledAt = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	rec.ChangedAt = rec.ChangedAt.Add(24 * time.Hour)
	b, err := raw.NewBatch(t.TempDir(), "correction", rec.ChangedAt)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Add(raw.Matches, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Land(ctx, ts.store, rec.ChangedAt); err != nil {
		t.Fatal(err)
	}
	before := ts.Current().ID
	if _, err := publishOnce(ctx, ts.store, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := ts.Load(ctx); err != nil || ts.Current().ID == before {
		t.Fatalf("swap did not happen: %v", err)
	}
	if now := pageAll(t, ts, list); now[0] != want[20] {
		t.Fatalf("the correction did not move the match to the top: first is %s", now[0])
	}
	runtime.GC()
	runtime.GC()
	if replaced.Value() != nil {
		t.Fatal("the replaced snapshot is still in memory while cursors minted on it are in use")
	}

	r := ts.get(t, list+"&cursor="+url.QueryEscape(next))
	if r.header.Get(HeaderCursorContinued) != "true" {
		t.Fatalf("the first page after the swap: %s %q", HeaderCursorContinued, r.header.Get(HeaderCursorContinued))
	}
	after := r.json(t)["meta"].(map[string]any)["next_cursor"].(string)
	if cont := ts.get(t, list+"&cursor="+url.QueryEscape(after)).header.Get(HeaderCursorContinued); cont != "" {
		t.Fatalf("a page whose cursor the new snapshot minted: %s %q", HeaderCursorContinued, cont)
	}
	got = append(got, pageFrom(t, ts, list, next)...)
	if stable := slices.Delete(slices.Clone(want), 20, 21); strings.Join(got, ",") != strings.Join(stable, ",") {
		t.Fatalf("paging across the swap: got %d rows, want the %d whose sort value did not change, once each, in order",
			len(got), len(stable))
	}
	if gotTeams = append(gotTeams, pageFrom(t, ts, teams, nextTeams)...); !slices.Equal(gotTeams, wantTeams) {
		t.Fatalf("teams by name across the swap: got %d rows, want %d", len(gotTeams), len(wantTeams))
	}
	if r := ts.get(t, teams+"&sort=-name&cursor="+url.QueryEscape(nextTeams)); r.status != 400 || r.code(t) != "invalid_cursor" {
		t.Fatalf("a cursor of another sort after the swap: %d %s", r.status, r.body)
	}
}

// findRawMatch returns the landed raw record of an upstream match id.
func findRawMatch(t *testing.T, rawDir, upstream string) raw.Match {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(rawDir, "*", "batches", "*", "matches.ndjson"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m raw.Match
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID == upstream {
				fh.Close()
				return m
			}
		}
		fh.Close()
	}
	t.Fatalf("raw match %s not found under %s", upstream, rawDir)
	return raw.Match{}
}

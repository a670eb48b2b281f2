package edge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/view"
)

// TestPagingAcrossChangedSwap: between a client's pages a new snapshot is
// swapped in in which a match of a later page was rescheduled to the top of
// the list. Keyset paging on the new snapshot would miss it; the cursor
// carries its snapshot, and the replaced snapshot serves the remaining pages
// (Options.CursorGrace), so the client sees the first snapshot's list
// exactly. With the grace disabled the same walk loses the row, which shows
// the scenario is a real one; so does a walk resumed after the grace has
// expired on the edge's clock (Options.Now): as the contract says, the cursor
// then continues on the newest snapshot from its position.
func TestPagingAcrossChangedSwap(t *testing.T) {
	for _, c := range []struct {
		name         string
		grace, after time.Duration // after: clock advance between the swap and the next page
		// more: swaps after the one with the correction; keep: the
		// replaced snapshots kept (0: the default).
		more, keep int
	}{
		{"within the default grace", 15 * time.Minute, 14 * time.Minute, 0, 0},
		{"grace disabled", NoCursorGrace, 0, 0, 0},
		{"grace expired", 15 * time.Minute, 15*time.Minute + time.Second, 0, 0},
		{"three swaps within the grace", 15 * time.Minute, 10 * time.Minute, 2, 0},
		{"three swaps, two snapshots kept", 15 * time.Minute, 10 * time.Minute, 2, 2},
	} {
		grace := c.grace
		ts := newTestServer(t)
		ts.o.CursorGrace = grace
		if c.keep > 0 {
			ts.o.CursorGraceSnapshots = c.keep
		}
		ctx := context.Background()
		const list = "/v1/cs2/matches?limit=9"
		want := pageAll(t, ts, list)
		if len(want) < 30 {
			t.Fatalf("fixture too small: %d matches", len(want))
		}
		r := ts.get(t, list)
		var got []string
		for _, row := range r.data(t) {
			got = append(got, row.(map[string]any)["id"].(string))
		}
		next := r.json(t)["meta"].(map[string]any)["next_cursor"].(string)

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
		for range c.more { // swaps of the corrected data, a few minutes apart
			ts.now = ts.now.Add(time.Minute)
			before := ts.Current().ID
			if _, err := publishOnce(ctx, ts.store, t.TempDir()); err != nil {
				t.Fatal(err)
			}
			if err := ts.Load(ctx); err != nil || ts.Current().ID == before {
				t.Fatalf("swap did not happen: %v", err)
			}
		}

		ts.now = ts.now.Add(c.after - time.Duration(c.more)*time.Minute)
		kept := grace > c.after && (c.keep == 0 || c.keep > c.more)
		if cont := ts.get(t, list+"&cursor="+url.QueryEscape(next)).header.Get(HeaderCursorContinued); (cont == "true") == kept {
			t.Fatalf("%s: %s %q", c.name, HeaderCursorContinued, cont)
		}
		got = append(got, pageFrom(t, ts, list, next)...)
		same := strings.Join(got, ",") == strings.Join(want, ",")
		if kept {
			if !same {
				t.Fatalf("%s: paging across a swap: got %d rows, want the first snapshot's %d", c.name, len(got), len(want))
			}
			// A fresh first page reads the new snapshot.
			if first := ts.get(t, list).data(t)[0].(map[string]any)["id"]; first != want[20] {
				t.Fatalf("a request without a cursor was served from the old snapshot")
			}
		} else if same {
			t.Fatalf("%s: the page should have come from the new snapshot and missed the rescheduled match", c.name)
		}
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

// A replaced snapshot stays in memory only while it is pinned for cursors:
// past CursorGraceSnapshots, the oldest is released (a timer per swap used
// to hold every snapshot of the grace period).
func TestReplacedSnapshotsAreReleased(t *testing.T) {
	ts := newTestServer(t)
	ts.o.CursorGraceSnapshots = 2
	ctx := context.Background()
	_, m, err := publish.LoadLatest(ctx, ts.store)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(ts.cacheRoot(), m.SnapshotID)
	first := weak.Make(ts.Current())
	for i := 0; i < 4; i++ {
		meta := viewMeta(m)
		meta.ID = fmt.Sprintf("%s-copy%d", m.SnapshotID, i)
		next, err := view.Load(ctx, dir, meta)
		if err != nil {
			t.Fatal(err)
		}
		ts.swap(next)
	}
	var ids []string
	for _, p := range *ts.pinned.Load() {
		ids = append(ids, p.v.ID())
	}
	if want := []string{m.SnapshotID + "-copy2", m.SnapshotID + "-copy1"}; !slices.Equal(ids, want) {
		t.Fatalf("pinned %v, want %v (the two replaced last, newest first)", ids, want)
	}
	runtime.GC()
	runtime.GC()
	if first.Value() != nil {
		t.Fatal("a snapshot replaced four swaps ago is still in memory")
	}
}

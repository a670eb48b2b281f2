package raw

import (
	"testing"
	"time"
)

// TestCompactionRuns: runs are consecutive live batches of one settled
// hour, at least two; another source between them, an hour boundary, an
// unsettled hour, a compacted batch or a batch sharing the first one's
// millisecond keep batches out.
func TestCompactionRuns(t *testing.T) {
	b := func(id, source string, replaces ...string) BatchManifest {
		return BatchManifest{BatchID: id, Source: source, Replaces: replaces}
	}
	batches := []BatchManifest{
		b("20261126T080000.000Z-000001", "live"),
		b("20261126T080005.000Z-000002", "live"),
		b("20261126T080010.000Z-000003", "synth"), // ends the run
		b("20261126T080015.000Z-000004", "live"),
		b("20261126T080020.000Z-000005", "live"),
		b("20261126T085959.999Z-000006", "live"),
		b("20261126T090000.000Z-000007", "live"), // the next hour
		b("20261126T090005.000Z-000008", "live"),
		b("20261126T100000.000Z-000009", "live", "x", "y"), // compacted already
		b("20261126T100005.000Z-00000a", "live"),
		b("20261126T110000.000Z-00000b", "live"), // shares its millisecond with the next
		b("20261126T110000.000Z-00000c", "other"),
		b("20261126T110005.000Z-00000d", "live"),
		b("20261126T120000.000Z-00000e", "live"), // not settled
		b("20261126T120005.000Z-00000f", "live"),
	}
	settled := time.Date(2026, 11, 26, 12, 30, 0, 0, time.UTC)
	var got [][]string
	for _, run := range compactionRuns(batches, "live", settled) {
		var ids []string
		for _, m := range run {
			ids = append(ids, m.BatchID[len(m.BatchID)-1:])
		}
		got = append(got, ids)
	}
	want := [][]string{{"1", "2"}, {"4", "5", "6"}, {"7", "8"}}
	if len(got) != len(want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("runs %v, want %v", got, want)
		}
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("runs %v, want %v", got, want)
			}
		}
	}
	// A compacted batch and what it replaces, both present: the
	// replaced ones are not read.
	left := dropReplaced([]BatchManifest{b("a", "live"), b("b", "live"), b("c", "live", "a", "b"), b("d", "synth")})
	if len(left) != 2 || left[0].BatchID != "c" || left[1].BatchID != "d" {
		t.Fatalf("dropReplaced: %+v", left)
	}
}

package snapshot

import (
	"context"
	"testing"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/view"
)

// corruptFiles are the served snapshot's table files with table corrupt
// (16 bytes flipped, at the first place from which the snapshot no longer
// loads), copied to a new folder: published, their checksums match the
// corrupt bytes.
func (k *testKeeper) corruptFiles(t *testing.T, table string) []publish.TableFile {
	t.Helper()
	meta := k.current().Meta
	for i := 1; i < 40; i++ {
		dst, files := worldtest.CorruptCopy(t, meta, table, float64(i)/41)
		if _, err := view.Load(context.Background(), dst, meta); err != nil {
			return files
		}
	}
	t.Fatalf("no corruption of %s fails the load", table)
	return nil
}

// A good snapshot and then a corrupt one are published between two polls:
// the corrupt one, which the pointer names, is rejected and the good one
// published after the one served is served instead. A third snapshot,
// good, is served at the next poll as usual.
func TestServesTheNewestGoodSnapshotAfterTheServed(t *testing.T) {
	k := newTestKeeper(t)
	ctx := context.Background()
	good := k.publishNext(t, k.servedFiles(t))
	bad := k.publishNext(t, k.corruptFiles(t, "player_stats"))
	if err := k.Load(ctx); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if id := k.current().ID; id != good.SnapshotID {
		t.Fatalf("serving %s, want %s, the newest good one (the pointer names the corrupt %s)", id, good.SnapshotID, bad.SnapshotID)
	}
	if problem, _ := k.StoreState(); problem == "" {
		t.Fatal("/ready's store state does not name the rejected snapshot")
	}
	next := k.publishNext(t, k.servedFiles(t))
	if err := k.Load(ctx); err != nil || k.current().ID != next.SnapshotID {
		t.Fatalf("the next good snapshot: %v, serving %s", err, k.current().ID)
	}
	if problem, _ := k.StoreState(); problem != "" {
		t.Fatalf("/ready's store state once a newer good snapshot is served: %s", problem)
	}
}

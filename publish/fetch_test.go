package publish

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eodata/eo/store"
)

// getCounter counts the Gets of a store, by key.
type getCounter struct {
	store.Store
	mu   sync.Mutex
	gets map[string]int
}

func (g *getCounter) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	g.mu.Lock()
	g.gets[key]++
	g.mu.Unlock()
	return g.Store.Get(ctx, key)
}

// A snapshot that shares tables with one already in the cache (an
// incremental run changes a few) downloads only the others: the shared
// ones are hard-linked from the cached snapshot once their bytes verify. A
// cached copy that does not verify is not used.
func TestFetchReusesTablesOfCachedSnapshots(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	dir := t.TempDir()
	filesA := writeTables(t, dir, "matches", "teams", "players")
	t0 := time.Now().Add(-time.Hour)
	a := mustPublish(t, mem, newManifest(t0), filesA)
	// B: matches changed, teams and players the same bytes.
	filesB := append(writeTables(t, t.TempDir(), "matches"), filesA[1:]...)
	b := mustPublish(t, mem, newManifest(t0.Add(time.Minute)), filesB)

	cache := t.TempDir()
	st := &getCounter{Store: mem, gets: map[string]int{}}
	if _, stats, err := FetchCounted(ctx, st, a, cache); err != nil || stats.Reused != 0 || stats.Kept != 0 {
		t.Fatalf("first fetch: %+v %v", stats, err)
	}
	dirB, stats, err := FetchCounted(ctx, st, b, cache)
	if err != nil {
		t.Fatal(err)
	}
	var sizeMatches, sizeShared int64
	for _, e := range b.Tables {
		if e.Name == "matches" {
			sizeMatches = e.Bytes
		} else {
			sizeShared += e.Bytes
		}
	}
	if stats.Downloaded != sizeMatches || stats.Reused != sizeShared {
		t.Fatalf("second fetch: %+v; want %d downloaded (matches) and %d reused", stats, sizeMatches, sizeShared)
	}
	for _, e := range b.Tables {
		n := st.gets[tableKey(b.SnapshotID, e.File)]
		if want := map[bool]int{true: 1, false: 0}[e.Name == "matches"]; n != want {
			t.Errorf("%s of B downloaded %d times, want %d", e.Name, n, want)
		}
		got := filepath.Join(dirB, e.File)
		if ok, err := fileMatches(got, e.Bytes, e.SHA256); err != nil || !ok {
			t.Errorf("%s of B does not hold its bytes: %v", e.Name, err)
		}
	}
	// Linked, not copied: one inode for the two snapshots' teams.
	fa, _ := os.Stat(filepath.Join(cache, a.SnapshotID, "teams.parquet"))
	fb, _ := os.Stat(filepath.Join(dirB, "teams.parquet"))
	if fa.Sys().(*syscall.Stat_t).Ino != fb.Sys().(*syscall.Stat_t).Ino {
		t.Error("teams.parquet of B is a copy, not a link")
	}

	// A damaged cached copy is passed over: C (the same tables as B) in a
	// cache whose only other snapshot has a corrupt players file downloads it.
	cache2 := t.TempDir()
	if _, err := Fetch(ctx, mem, a, cache2); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache2, a.SnapshotID, "players.parquet"), []byte("PAR1 damaged PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stats, err = FetchCounted(ctx, mem, b, cache2)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Reused != sizeShared-entry(t, b, "players").Bytes {
		t.Fatalf("fetch beside a damaged cached copy: %+v, want players downloaded and teams reused", stats)
	}
	assertNoTempFiles(t, cache)
	assertNoTempFiles(t, cache2)
}

func entry(t *testing.T, m Manifest, name string) TableEntry {
	t.Helper()
	for _, e := range m.Tables {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no table %s in %s", name, m.SnapshotID)
	return TableEntry{}
}

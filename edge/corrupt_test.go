package edge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/snapshot"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// TestCorruptParquetIsAnErrorNotAPanic sweeps corruptions over a real
// snapshot table: each load either succeeds or fails with tables.ErrCorrupt.
// The Parquet decoders panic on many of them; before the fix that panic,
// on a loading goroutine, killed the process (this test binary).
func TestCorruptParquetIsAnErrorNotAPanic(t *testing.T) {
	ts := newTestServer(t)
	// map_results is read into rows (typed column decoders); match_parts
	// holds the matches' pre-rendered parts, each frame under a checksum:
	// every corruption of one of its frames must fail the load.
	for _, table := range []string{"map_results", tables.MatchPartsTable} {
		failed := 0
		for i := 1; i < 40; i++ {
			dir, _ := worldtest.CorruptCopy(t, ts.Current().Meta, table, float64(i)/41)
			_, err := view.Load(context.Background(), dir, ts.Current().Meta)
			if err != nil {
				if !errors.Is(err, tables.ErrCorrupt) {
					t.Fatalf("%s corrupt at %d/41: %v does not wrap tables.ErrCorrupt", table, i, err)
				}
				failed++
			}
		}
		if failed == 0 {
			t.Fatalf("%s: no corruption was detected: the sweep tests nothing", table)
		}
		if table == tables.MatchPartsTable && failed != 39 {
			t.Errorf("%s: %d of 39 corruptions failed the load, want all", table, failed)
		}
		t.Logf("%s: %d of 39 corruptions failed the load (the rest decoded to other values)", table, failed)
	}
}

// TestCorruptSnapshotIsRejectedNotServed: a published snapshot whose bytes
// are corrupt but match the manifest checksums is rejected by the running
// edge (the last good snapshot keeps serving, a metric counts it, it is not
// fetched again), removed from the local cache, and a restart with the store
// unreachable serves the last good cached snapshot instead of panicking.
func TestCorruptSnapshotIsRejectedNotServed(t *testing.T) {
	st := fixtureStore(t)
	counting := &countingStore{Store: st}
	ts := testServerOf(t, st, func(o *Options) { o.Snapshots.Store = counting })
	good := ts.Current().ID
	// Find a corruption that fails the load (most do).
	var files []publish.TableFile
	for i := 1; i < 40 && files == nil; i++ {
		dir, fs := worldtest.CorruptCopy(t, ts.Current().Meta, "map_results", float64(i)/41)
		if _, err := view.Load(context.Background(), dir, ts.Current().Meta); err != nil {
			files = fs
		}
	}
	if files == nil {
		t.Fatal("no corruption fails the load")
	}
	bad := ts.publishNext(t, files)
	err := ts.Load(context.Background())
	if !errors.Is(err, tables.ErrCorrupt) {
		t.Fatalf("Load of the corrupt snapshot: %v, want tables.ErrCorrupt", err)
	}
	if ts.Current().ID != good {
		t.Fatalf("serving %s, want the last good %s", ts.Current().ID, good)
	}
	if r := ts.get(t, "/v1/cs2/matches?limit=1"); r.status != 200 {
		t.Fatalf("after the rejection: %d %s", r.status, r.body)
	}
	if _, err := os.Stat(ts.cachedDir(bad.SnapshotID)); !os.IsNotExist(err) {
		t.Fatalf("the rejected snapshot is still in the cache: %v", err)
	}
	// /ready: still serving (200), degraded, the store check names it.
	var h readyBody
	if r := ts.get(t, "/ready", "-"); r.status != 200 || json.Unmarshal(r.body, &h) != nil || h.Status != "degraded" ||
		h.Checks["store"].OK || h.Checks["store"].Error == nil || !strings.Contains(*h.Checks["store"].Error, bad.SnapshotID+" is rejected") {
		t.Fatalf("/ready after the rejection: %d %s", r.status, r.body)
	}
	// Not fetched again while the pointer names it.
	counting.gets.Store(0)
	if err := ts.Load(context.Background()); err != nil {
		t.Fatalf("second Load: %v", err)
	}
	if n := counting.gets.Load(); n > 2 { // the pointer and the manifest
		t.Fatalf("the rejected snapshot was fetched again (%d gets)", n)
	}
	if body := operatorMetrics(t, ts); !strings.Contains(body, "\neo_snapshot_rejected_total 1\n") {
		t.Fatalf("metrics do not count the rejection:\n%s", body)
	}

	// A restart with the store down serves the good cached snapshot.
	srv, err := New(Options{Snapshots: snapshot.Options{Store: downStore{}, CacheDir: ts.o.Snapshots.CacheDir}, Auth: &testAuth{}, Logger: quietLog,
		Now: func() time.Time { return fixtureNow }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("restart with the store down: %v", err)
	}
	if srv.Current().ID != good {
		t.Fatalf("restart serves %s, want %s", srv.Current().ID, good)
	}
}

// countingStore counts Gets.
type countingStore struct {
	store.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

// downStore is a store that cannot be reached.
type downStore struct{}

var errDown = errors.New("dial tcp 127.0.0.1:9: connect: connection refused")

func (downStore) Put(context.Context, string, io.Reader, int64) error { return errDown }
func (downStore) Get(context.Context, string) (io.ReadCloser, error)  { return nil, errDown }
func (downStore) Stat(context.Context, string) (store.ObjectInfo, error) {
	return store.ObjectInfo{}, errDown
}
func (downStore) List(context.Context, string) ([]store.ObjectInfo, error) { return nil, errDown }
func (downStore) Delete(context.Context, string) error                     { return errDown }
func (downStore) Update(context.Context, string, func([]byte) ([]byte, error)) error {
	return errDown
}
func (downStore) String() string { return "down" }

// operatorMetrics reads /metrics with an operator key.
func operatorMetrics(t *testing.T, ts *testServer) string {
	t.Helper()
	const operatorKey = "eo_live_0000000000000000000000000000000000000000000000ab"
	auth := ts.o.Auth.(*testAuth)
	auth.mu.Lock()
	auth.keys[operatorKey] = access.Principal{KeyID: "k-op", AccountID: "a-op", Plan: access.PlanInternal, Display: "eo_live_…00ab"}
	auth.mu.Unlock()
	r := ts.get(t, "/metrics", operatorKey)
	if r.status != 200 {
		t.Fatalf("/metrics: %d %s", r.status, r.body)
	}
	return string(r.body)
}

// An edge killed mid-fetch leaves a temp file in its snapshot cache; the
// next swap's prune removes it once it has not been written for an hour,
// and keeps a fresh one.
func TestCachePruneSweepsAbandonedFetches(t *testing.T) {
	ts := newTestServer(t)
	dir := ts.Current().Meta.Dir
	old, fresh := filepath.Join(dir, ".tmp-odds_lines.parquet-1"), filepath.Join(dir, ".tmp-teams.parquet-2")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := publishOnce(context.Background(), ts.store, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := ts.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the abandoned temp file of a fetch is still in the cache: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temp file was removed: %v", err)
	}
}

// corruptUnread publishes, after ts's snapshot, a copy whose rounds table
// (which no resource reads: the match parts come from match_parts) is
// corrupt with checksums that match it, as when a writer produced it
// corrupt, and returns the new snapshot's manifest.
func corruptUnread(t *testing.T, ts *testServer) publish.Manifest {
	t.Helper()
	for i := 1; i < 40; i++ {
		dir, files := worldtest.CorruptCopy(t, ts.Current().Meta, "rounds", float64(i)/41)
		if _, err := view.Load(context.Background(), dir, ts.Current().Meta); err != nil {
			return ts.publishNext(t, files)
		}
	}
	t.Fatal("no corruption of rounds fails the load: the table is not verified")
	return publish.Manifest{}
}

// exportSum downloads /exports/{table} through srv and returns its
// SHA-256.
func exportSum(t *testing.T, srv *Server, table string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v1/cs2/exports/"+table, nil)
	req.Header.Set("Authorization", "Bearer "+opsKey)
	resp, err := srv.App().Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/exports/%s: %d %v %.200s", table, resp.StatusCode, err, b)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestCorruptUnreadTableIsRejected: a snapshot whose corrupt table is one
// the edge does not read (its checksums forged to match) is rejected like
// any corrupt snapshot: the last good one keeps serving, and exporting the
// corrupt table's good bytes. An edge started with an empty cache on that
// store serves the newest good snapshot instead of failing.
func TestCorruptUnreadTableIsRejected(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	good := ts.Current()
	i := slices.IndexFunc(good.Meta.Exports, func(e view.ExportTable) bool { return e.Name == "rounds" })
	if i < 0 {
		t.Fatal("the fixture exports no rounds table")
	}
	goodSum := good.Meta.Exports[i].SHA256
	bad := corruptUnread(t, ts)
	if err := ts.Load(ctx); !errors.Is(err, tables.ErrCorrupt) {
		t.Fatalf("Load of the snapshot with a corrupt unread table: %v, want tables.ErrCorrupt", err)
	}
	if ts.Current().ID != good.ID {
		t.Fatalf("serving %s, want the last good %s", ts.Current().ID, good.ID)
	}
	if sum := exportSum(t, ts.Server, "rounds"); sum != goodSum {
		t.Fatalf("/exports/rounds streams %s, want the good snapshot's %s", sum, goodSum)
	}

	restarted, err := New(Options{Snapshots: snapshot.Options{Store: ts.store, CacheDir: t.TempDir()}, Auth: ts.o.Auth, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := restarted.Start(cctx); err != nil {
		t.Fatalf("an edge with an empty cache on a store whose newest snapshot is corrupt: %v", err)
	}
	if restarted.Current().ID != good.ID {
		t.Fatalf("the restarted edge serves %s, want the newest good %s", restarted.Current().ID, good.ID)
	}
	if c := readyCheck(t, restarted, "store"); c.OK || c.Error == nil || !strings.Contains(*c.Error, bad.SnapshotID+" is rejected") {
		t.Fatalf("/ready's store check on the restarted edge: %+v", c)
	}
	if sum := exportSum(t, restarted, "rounds"); sum != goodSum {
		t.Fatalf("the restarted edge's /exports/rounds streams %s, want the good snapshot's %s", sum, goodSum)
	}
}

package publish

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/store"
)

// writeTables writes fake Parquet files (the package never parses them) of
// different sizes into dir and returns them in an unsorted order.
func writeTables(t testing.TB, dir string, names ...string) []TableFile {
	t.Helper()
	var out []TableFile
	for i, name := range names {
		body := make([]byte, 1000*(i+1)+i)
		rand.Read(body)
		data := append(append([]byte("PAR1"), body...), "PAR1"...)
		p := filepath.Join(dir, name+".parquet")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, TableFile{Name: name, Path: p, Rows: int64(10 * (i + 1))})
	}
	return out
}

func fileSHA(t *testing.T, p string) (string, int64) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), int64(len(b))
}

func newManifest(created time.Time) Manifest {
	return Manifest{
		SnapshotID:         NewSnapshotID(created),
		CreatedAt:          created.UTC(),
		SchemaVersion:      3,
		PipelineVersion:    "v1.2.3",
		RawContractVersion: 2,
		Extra:              map[string]string{"source": "test"},
	}
}

func mustPublish(t *testing.T, s store.Store, m Manifest, files []TableFile) Manifest {
	t.Helper()
	got, err := Publish(context.Background(), s, m, files)
	if err != nil {
		t.Fatalf("Publish %s: %v", m.SnapshotID, err)
	}
	return got
}

func snapshotIDs(ms []Manifest) []string {
	ids := []string{}
	for _, m := range ms {
		ids = append(ids, m.SnapshotID)
	}
	return ids
}

// checkFetched fetches m into a fresh folder and compares each table with
// the local source file.
func checkFetched(t *testing.T, s store.Store, m Manifest, files []TableFile) {
	t.Helper()
	dir, err := Fetch(context.Background(), s, m, t.TempDir())
	if err != nil {
		t.Fatalf("Fetch %s: %v", m.SnapshotID, err)
	}
	for _, f := range files {
		want, _ := os.ReadFile(f.Path)
		got, err := os.ReadFile(filepath.Join(dir, f.Name+".parquet"))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("fetched %s differs from source (err %v)", f.Name, err)
		}
	}
}

// testSnapshots runs the snapshot life cycle against one store.
func testSnapshots(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)

	if _, err := ReadPointer(ctx, s); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("ReadPointer on empty store: err = %v, want ErrNoSnapshot", err)
	}
	if _, _, err := LoadLatest(ctx, s); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("LoadLatest on empty store: err = %v, want ErrNoSnapshot", err)
	}
	if _, err := ReadManifest(ctx, s, "20200101T000000Z-000000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ReadManifest missing: err = %v, want ErrNotFound", err)
	}
	if ms, err := ListSnapshots(ctx, s); err != nil || len(ms) != 0 {
		t.Fatalf("ListSnapshots on empty store = %v, %v", ms, err)
	}

	// Keys other parts of the system own.
	foreign := map[string]string{
		"raw/2026/11/23/feed.json": "raw feed",
		"state/cursor.json":        `{"cursor":42}`,
		"snapshotsX/not-ours":      "sibling prefix",
	}
	for k, v := range foreign {
		mustPut(t, s, k, []byte(v))
	}

	src := t.TempDir()
	files1 := writeTables(t, src, "players", "matches", "teams")
	m1 := mustPublish(t, s, newManifest(now.Add(-48*time.Hour)), files1)
	src2 := filepath.Join(src, "two")
	if err := os.Mkdir(src2, 0o755); err != nil {
		t.Fatal(err)
	}
	files2 := writeTables(t, src2, "matches", "players", "teams")
	m2 := mustPublish(t, s, newManifest(now.Add(-time.Hour)), files2)

	// Manifest contents.
	if got := []string{m2.Tables[0].Name, m2.Tables[1].Name, m2.Tables[2].Name}; !slices.Equal(got, []string{"matches", "players", "teams"}) {
		t.Errorf("manifest tables not sorted by name: %v", got)
	}
	for _, f := range files2 {
		sha, size := fileSHA(t, f.Path)
		var e *TableEntry
		for i := range m2.Tables {
			if m2.Tables[i].Name == f.Name {
				e = &m2.Tables[i]
			}
		}
		if e == nil {
			t.Fatalf("manifest misses table %s", f.Name)
		}
		if e.File != f.Name+".parquet" || e.Bytes != size || e.SHA256 != sha || e.Rows != f.Rows {
			t.Errorf("entry %+v, want file %s.parquet bytes %d sha %s rows %d", *e, f.Name, size, sha, f.Rows)
		}
		stored := mustGet(t, s, "snapshots/"+m2.SnapshotID+"/"+f.Name+".parquet")
		if sum := sha256.Sum256(stored); hex.EncodeToString(sum[:]) != sha {
			t.Errorf("stored %s has the wrong content", f.Name)
		}
	}

	// Pointer names snapshot 2 and carries the stored manifest's checksum.
	p, err := ReadPointer(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if p.SnapshotID != m2.SnapshotID || p.Manifest != "snapshots/"+m2.SnapshotID+"/manifest.json" {
		t.Errorf("pointer = %+v, want snapshot %s", p, m2.SnapshotID)
	}
	mb := mustGet(t, s, p.Manifest)
	if sum := sha256.Sum256(mb); hex.EncodeToString(sum[:]) != p.ManifestSHA256 {
		t.Errorf("pointer manifest_sha256 %s does not match stored manifest", p.ManifestSHA256)
	}
	var raw map[string]any
	if err := json.Unmarshal(mb, &raw); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"snapshot_id", "created_at", "schema_version", "pipeline_version", "raw_contract_version", "tables", "extra"} {
		if _, ok := raw[field]; !ok {
			t.Errorf("stored manifest lacks %q", field)
		}
	}
	lp, lm, err := LoadLatest(ctx, s)
	if err != nil {
		t.Fatalf("LoadLatest: %v", err)
	}
	if lp != p || !reflect.DeepEqual(lm, m2) {
		t.Errorf("LoadLatest = %+v, %+v\nwant %+v, %+v", lp, lm, p, m2)
	}
	if rm, err := ReadManifest(ctx, s, m1.SnapshotID); err != nil || !reflect.DeepEqual(rm, m1) {
		t.Errorf("ReadManifest(m1) = %+v, %v", rm, err)
	}
	if ms, err := ListSnapshots(ctx, s); err != nil || !slices.Equal(snapshotIDs(ms), []string{m1.SnapshotID, m2.SnapshotID}) {
		t.Errorf("ListSnapshots = %v, %v; want [m1 m2]", snapshotIDs(ms), err)
	}
	if _, err := Publish(ctx, s, m1, files1); err == nil {
		t.Error("re-publishing an existing snapshot id: want error")
	}

	// Fetch verifies and caches.
	cache := t.TempDir()
	dir, err := Fetch(ctx, s, m2, cache)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if dir != filepath.Join(cache, m2.SnapshotID) {
		t.Errorf("Fetch dir = %s", dir)
	}
	for _, f := range files2 {
		want, _ := os.ReadFile(f.Path)
		if got, err := os.ReadFile(filepath.Join(dir, f.Name+".parquet")); err != nil || !bytes.Equal(got, want) {
			t.Errorf("fetched %s differs (err %v)", f.Name, err)
		}
	}
	var fm Manifest
	if b, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err != nil || json.Unmarshal(b, &fm) != nil || !reflect.DeepEqual(fm, m2) {
		t.Errorf("fetched manifest.json = %+v, %v", fm, err)
	}
	assertNoTempFiles(t, cache)

	// Corrupt snapshot 2's stored players table. A warm cache still serves
	// it (the store is not read), a cold fetch must refuse it.
	playersKey := "snapshots/" + m2.SnapshotID + "/players.parquet"
	good := mustGet(t, s, playersKey)
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0xff
	mustPut(t, s, playersKey, bad)
	if _, err := Fetch(ctx, s, m2, cache); err != nil {
		t.Errorf("Fetch with a valid local cache: %v", err)
	}
	cold := t.TempDir()
	_, err = Fetch(ctx, s, m2, cold)
	if !errors.Is(err, store.ErrChecksum) || !strings.Contains(err.Error(), "players") {
		t.Errorf("Fetch of corrupted table: err = %v, want ErrChecksum naming players", err)
	}
	if _, err := os.Stat(filepath.Join(cold, m2.SnapshotID, "players.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("corrupted table was written to the cache (stat err %v)", err)
	}
	assertNoTempFiles(t, cold)
	// A damaged cache file is re-downloaded and then caught.
	if err := os.WriteFile(filepath.Join(dir, "players.parquet"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(ctx, s, m2, cache); !errors.Is(err, store.ErrChecksum) {
		t.Errorf("Fetch with a damaged cache and a corrupted store: err = %v, want ErrChecksum", err)
	}
	// Truncated object: size mismatch is also ErrChecksum.
	mustPut(t, s, playersKey, good[:len(good)-7])
	if _, err := Fetch(ctx, s, m2, t.TempDir()); !errors.Is(err, store.ErrChecksum) || !strings.Contains(err.Error(), "players") {
		t.Errorf("Fetch of truncated table: err = %v, want ErrChecksum naming players", err)
	}
	// Oversized object too.
	mustPut(t, s, playersKey, append(bytes.Clone(good), "extra"...))
	if _, err := Fetch(ctx, s, m2, t.TempDir()); !errors.Is(err, store.ErrChecksum) {
		t.Errorf("Fetch of oversized table: err = %v, want ErrChecksum", err)
	}
	mustPut(t, s, playersKey, good)
	// Repaired store: the cache heals.
	if _, err := Fetch(ctx, s, m2, cache); err != nil {
		t.Errorf("Fetch after repair: %v", err)
	}

	// A tampered manifest no longer matches the pointer.
	mustPut(t, s, p.Manifest, append(bytes.Clone(mb), ' '))
	if _, _, err := LoadLatest(ctx, s); !errors.Is(err, store.ErrChecksum) {
		t.Errorf("LoadLatest with tampered manifest: err = %v, want ErrChecksum", err)
	}
	mustPut(t, s, p.Manifest, mb)

	// Abandoned partial upload (table files, no manifest).
	partialID := NewSnapshotID(now.Add(-2 * time.Hour))
	mustPut(t, s, "snapshots/"+partialID+"/matches.parquet", []byte("PAR1 half PAR1"))
	if ms, err := ListSnapshots(ctx, s); err != nil || !slices.Equal(snapshotIDs(ms), []string{m1.SnapshotID, m2.SnapshotID}) {
		t.Errorf("ListSnapshots with a partial upload = %v, %v; want [m1 m2]", snapshotIDs(ms), err)
	}

	// Keep=2 protects m1 although it is past retention; the partial upload
	// is fresh (ModTime now), so nothing goes.
	removed, err := Clean(ctx, s, CleanOptions{Retention: 24 * time.Hour, Keep: 2, Now: time.Now()})
	if err != nil || len(removed) != 0 {
		t.Fatalf("Clean(keep 2) removed %v, %v; want nothing", removed, err)
	}
	// Keep=1: m1 is past retention and goes; the partial stays (fresh).
	removed, err = Clean(ctx, s, CleanOptions{Retention: 24 * time.Hour, Keep: 1, Now: time.Now()})
	if err != nil || !slices.Equal(removed, []string{m1.SnapshotID}) {
		t.Fatalf("Clean(keep 1) removed %v, %v; want [m1]", removed, err)
	}
	if _, err := ReadManifest(ctx, s, m1.SnapshotID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("m1 manifest still there: %v", err)
	}
	if keys := listKeys(t, s, "snapshots/"+m1.SnapshotID+"/"); len(keys) != 0 {
		t.Errorf("m1 objects left: %v", keys)
	}
	// Far in the future with Keep=0: everything is old, but the pointer's
	// snapshot stays; the abandoned partial goes.
	removed, err = Clean(ctx, s, CleanOptions{Retention: 24 * time.Hour, Keep: 0, Now: time.Now().Add(72 * time.Hour)})
	if err != nil || !slices.Equal(removed, []string{partialID}) {
		t.Fatalf("Clean(future) removed %v, %v; want [partial %s]", removed, err, partialID)
	}
	wantKeys := []string{
		"snapshots/" + m2.SnapshotID + "/manifest.json",
		"snapshots/" + m2.SnapshotID + "/matches.parquet",
		"snapshots/" + m2.SnapshotID + "/players.parquet",
		"snapshots/" + m2.SnapshotID + "/published.json",
		"snapshots/" + m2.SnapshotID + "/teams.parquet",
		PointerKey,
	}
	if got := listKeys(t, s, "snapshots/"); !slices.Equal(got, wantKeys) {
		t.Errorf("after Clean snapshots/ = %q\nwant %q", got, wantKeys)
	}
	for k, v := range foreign {
		if got, err := store.GetBytes(ctx, s, k); err != nil || string(got) != v {
			t.Errorf("Clean touched %s: %q, %v", k, got, err)
		}
	}
	if _, lm, err := LoadLatest(ctx, s); err != nil || lm.SnapshotID != m2.SnapshotID {
		t.Errorf("LoadLatest after Clean = %s, %v", lm.SnapshotID, err)
	}
	checkFetched(t, s, m2, files2)
	if _, err := Clean(ctx, s, CleanOptions{Retention: -time.Hour}); err == nil {
		t.Error("Clean with negative retention: want error")
	}
}

func TestSnapshots(t *testing.T) { eachStore(t, "eo/prod", testSnapshots) }

func TestNewSnapshotID(t *testing.T) {
	at := time.Date(2026, 11, 23, 9, 55, 0, 0, time.FixedZone("CET", 3600))
	id := NewSnapshotID(at)
	if !regexp.MustCompile(`^20261123T085500Z-[0-9a-f]{6}$`).MatchString(id) {
		t.Errorf("NewSnapshotID = %q", id)
	}
	if a, b := NewSnapshotID(at), NewSnapshotID(at); a == id && b == id {
		t.Errorf("NewSnapshotID is not random: %q three times", id)
	}
	if later := NewSnapshotID(at.Add(time.Second)); later <= id {
		t.Errorf("ids do not sort by time: %q <= %q", later, id)
	}
}

func TestPublishRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	s := store.NewMemory()
	files := writeTables(t, t.TempDir(), "matches")
	for name, tc := range map[string]struct {
		m     Manifest
		files []TableFile
	}{
		"no files":     {newManifest(time.Now()), nil},
		"bad id":       {Manifest{SnapshotID: "../x"}, files},
		"slash name":   {newManifest(time.Now()), []TableFile{{Name: "a/b", Path: files[0].Path}}},
		"empty name":   {newManifest(time.Now()), []TableFile{{Name: "", Path: files[0].Path}}},
		"duplicate":    {newManifest(time.Now()), []TableFile{files[0], files[0]}},
		"missing file": {newManifest(time.Now()), []TableFile{{Name: "x", Path: "/does/not/exist.parquet"}}},
	} {
		if _, err := Publish(ctx, s, tc.m, tc.files); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
	if _, err := ReadPointer(ctx, s); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("a rejected Publish moved the pointer: %v", err)
	}
	// Defaults: empty id and time are filled in.
	m, err := Publish(ctx, s, Manifest{}, files)
	if err != nil || m.SnapshotID == "" || m.CreatedAt.IsZero() {
		t.Errorf("Publish with defaults = %+v, %v", m, err)
	}
}

// faultStore fails the failAt-th Put (1-based) without storing anything.
type faultStore struct {
	store.Store
	mu     sync.Mutex
	puts   int
	failAt int
	failed []string
}

var errInjected = errors.New("injected fault")

// fault counts one write of key and reports whether it is the one to fail.
func (f *faultStore) fault(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	if f.puts != f.failAt {
		return false
	}
	f.failed = append(f.failed, key)
	return true
}

func (f *faultStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if f.fault(key) {
		_, _ = io.CopyN(io.Discard, r, size/2) // a partial read, like a dropped connection
		return fmt.Errorf("put %s: %w", key, errInjected)
	}
	return f.Store.Put(ctx, key, r, size)
}

// Update counts its write as a put: a fault there fails it before the
// object changes.
func (f *faultStore) Update(ctx context.Context, key string, fn func([]byte) ([]byte, error)) error {
	return f.Store.Update(ctx, key, func(cur []byte) ([]byte, error) {
		next, err := fn(cur)
		if err != nil {
			return nil, err
		}
		if f.fault(key) {
			return nil, fmt.Errorf("put %s: %w", key, errInjected)
		}
		return next, nil
	})
}

func TestPublishCrashSafety(t *testing.T) {
	backends := map[string]func(t *testing.T) store.Store{
		"memory": func(t *testing.T) store.Store { return store.NewMemory() },
		"local":  func(t *testing.T) store.Store { return newTestLocal(t) },
		"s3":     func(t *testing.T) store.Store { return newTestS3(t, "crash") },
	}
	for bname, newStore := range backends {
		// 3 table files + manifest + pointer = 5 Puts.
		for failAt := 1; failAt <= 5; failAt++ {
			t.Run(fmt.Sprintf("%s/put%d", bname, failAt), func(t *testing.T) {
				ctx := context.Background()
				base := newStore(t)
				src := t.TempDir()
				files1 := writeTables(t, src, "matches", "players", "teams")
				m1 := mustPublish(t, base, newManifest(time.Now().Add(-time.Hour)), files1)

				src2 := filepath.Join(src, "2")
				if err := os.Mkdir(src2, 0o755); err != nil {
					t.Fatal(err)
				}
				fs := &faultStore{Store: base, failAt: failAt}
				m2 := newManifest(time.Now())
				_, err := Publish(ctx, fs, m2, writeTables(t, src2, "matches", "players", "teams"))
				if !errors.Is(err, errInjected) {
					t.Fatalf("Publish with fault at put %d: err = %v, want injected fault", failAt, err)
				}
				if fs.puts != failAt {
					t.Errorf("Publish kept going after the failure: %d puts, failed at %d (%v)", fs.puts, failAt, fs.failed)
				}
				t.Logf("failed put: %v; error: %v", fs.failed, err)

				p, err := ReadPointer(ctx, base)
				if err != nil || p.SnapshotID != m1.SnapshotID {
					t.Fatalf("pointer = %+v, %v; want snapshot 1 %s", p, err, m1.SnapshotID)
				}
				_, lm, err := LoadLatest(ctx, base)
				if err != nil || !reflect.DeepEqual(lm, m1) {
					t.Fatalf("LoadLatest = %+v, %v; want snapshot 1", lm, err)
				}
				checkFetched(t, base, lm, files1)

				ms, err := ListSnapshots(ctx, base)
				if err != nil {
					t.Fatal(err)
				}
				// Snapshot 2 is never listed as published, not even when
				// only the pointer failed: then it is complete but an
				// orphan, never served.
				if got := snapshotIDs(ms); !slices.Equal(got, []string{m1.SnapshotID}) {
					t.Errorf("ListSnapshots = %v, want [%s]", got, m1.SnapshotID)
				}
				all, err := ListAll(ctx, base)
				if err != nil {
					t.Fatal(err)
				}
				var states []string
				for _, l := range all {
					states = append(states, l.SnapshotID+"="+l.State)
				}
				want := []string{m1.SnapshotID + "=" + StateCurrent}
				if failAt == 5 {
					want = append(want, m2.SnapshotID+"="+StateOrphan)
				}
				if !slices.Equal(states, want) {
					t.Errorf("ListAll = %v, want %v", states, want)
				}

				// Clean later removes the debris but never snapshot 1.
				removed, err := Clean(ctx, base, CleanOptions{Retention: time.Minute, Now: time.Now().Add(time.Hour)})
				if err != nil {
					t.Fatal(err)
				}
				if failAt > 1 && !slices.Equal(removed, []string{m2.SnapshotID}) {
					t.Errorf("Clean removed %v, want [%s]", removed, m2.SnapshotID)
				}
				if _, _, err := LoadLatest(ctx, base); err != nil {
					t.Errorf("LoadLatest after Clean: %v", err)
				}
			})
		}
	}
}

// slowStore lets the first Put through, then blocks every later Put for a
// long time, so the parent process can kill it mid-publish.
type slowStore struct {
	store.Store
	puts int
}

func (s *slowStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	s.puts++
	if s.puts > 1 {
		time.Sleep(time.Minute)
	}
	return s.Store.Put(ctx, key, r, size)
}

// The helper's store and its folder for the tables it writes (the
// parent's: the killed helper never removes a folder of its own).
const (
	helperEnv     = "EO_PUBLISH_HELPER_STORE"
	helperWorkEnv = "EO_PUBLISH_HELPER_WORK"
)

// TestHelperPublishProcess is the child of TestPublishKilledProcess; it does
// nothing in a normal run.
func TestHelperPublishProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process for TestPublishKilledProcess")
	}
	s, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := writeTables(t, os.Getenv(helperWorkEnv), "matches", "players", "teams")
	if _, err := Publish(context.Background(), &slowStore{Store: s}, newManifest(time.Now()), files); err != nil {
		t.Fatal(err)
	}
	t.Fatal("publish finished; the parent should have killed this process")
}

func TestPublishKilledProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	files1 := writeTables(t, t.TempDir(), "matches", "players", "teams")
	m1 := mustPublish(t, s, newManifest(time.Now().Add(-time.Hour)), files1)

	child := proctest.StartChild(t, "TestHelperPublishProcess", helperEnv+"="+dir, helperWorkEnv+"="+t.TempDir())

	// Wait for the child's first table file to appear.
	var newKey string
	proctest.Within(20*time.Second, 10*time.Millisecond, func() bool {
		for _, k := range listKeys(t, s, "snapshots/") {
			if k != PointerKey && !strings.HasPrefix(k, "snapshots/"+m1.SnapshotID+"/") {
				newKey = k
				return true
			}
		}
		select {
		case <-child.Exited:
			return true
		default:
			return false
		}
	})
	select {
	case <-child.Exited:
		t.Fatalf("helper exited before the kill: %v\n%s", child.Err(), child.Out.String())
	default:
	}
	if newKey == "" {
		t.Fatalf("no table file from the helper after 20s\n%s", child.Out.String())
	}
	child.Kill()
	if !strings.HasSuffix(newKey, ".parquet") {
		t.Errorf("first object of the killed publish = %s, want a table file", newKey)
	}

	p, err := ReadPointer(ctx, s)
	if err != nil || p.SnapshotID != m1.SnapshotID {
		t.Fatalf("pointer after kill = %+v, %v; want %s", p, err, m1.SnapshotID)
	}
	_, lm, err := LoadLatest(ctx, s)
	if err != nil {
		t.Fatalf("LoadLatest after kill: %v", err)
	}
	checkFetched(t, s, lm, files1)
	if ms, err := ListSnapshots(ctx, s); err != nil || !slices.Equal(snapshotIDs(ms), []string{m1.SnapshotID}) {
		t.Errorf("ListSnapshots after kill = %v, %v", snapshotIDs(ms), err)
	}
	partial, _ := snapshotIDOf(newKey)
	removed, err := Clean(ctx, s, CleanOptions{Retention: time.Minute, Now: time.Now().Add(time.Hour)})
	if err != nil || !slices.Equal(removed, []string{partial}) {
		t.Errorf("Clean after kill removed %v, %v; want [%s]", removed, err, partial)
	}
}

// TestOrphanIsNotKeptOverAServedSnapshot: a snapshot whose publish stopped
// between its manifest and the pointer (an orphan, never served) is listed
// as such, and Clean's Keep counts served snapshots only, so the orphan
// goes and the served previous snapshot stays.
func TestOrphanIsNotKeptOverAServedSnapshot(t *testing.T) {
	ctx := context.Background()
	s := store.NewMemory()
	t0 := time.Now().Add(-time.Hour)
	m1, err := Publish(ctx, s, newManifest(t0), writeTables(t, t.TempDir(), "matches", "teams"))
	if err != nil {
		t.Fatal(err)
	}
	m2, err := Publish(ctx, s, newManifest(t0.Add(time.Minute)), writeTables(t, t.TempDir(), "matches", "teams"))
	if err != nil {
		t.Fatal(err)
	}
	// The third publish dies at the pointer (its 4th put: 2 tables, manifest, pointer).
	m3 := newManifest(t0.Add(2 * time.Minute))
	if _, err := Publish(ctx, &faultStore{Store: s, failAt: 4}, m3, writeTables(t, t.TempDir(), "matches", "teams")); !errors.Is(err, errInjected) {
		t.Fatalf("publish 3: %v", err)
	}
	all, err := ListAll(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, l := range all {
		states = append(states, l.State)
	}
	if !slices.Equal(states, []string{StatePublished, StateCurrent, StateOrphan}) {
		t.Fatalf("states = %v, want published, current, orphan", states)
	}
	removed, err := Clean(ctx, s, CleanOptions{Retention: time.Minute, Keep: 2, Now: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] == m1.SnapshotID || removed[0] == m2.SnapshotID {
		t.Fatalf("Clean removed %v; want only the orphan (kept %s and %s)", removed, m1.SnapshotID, m2.SnapshotID)
	}
}

// An internal table is stored under internal/, flagged in the manifest,
// fetched to the same relative path and removed with its snapshot.
func testInternalTables(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	files := writeTables(t, t.TempDir(), "matches", "live_ids")
	files[1].Internal = true
	old := mustPublish(t, s, newManifest(now.Add(-48*time.Hour)), files)
	for _, e := range old.Tables {
		want := e.Name + ".parquet"
		if e.Name == "live_ids" {
			want = InternalDir + "/live_ids.parquet"
		}
		if e.File != want || e.Internal != (e.Name == "live_ids") {
			t.Errorf("manifest entry %+v, want file %s", e, want)
		}
	}
	if _, err := s.Stat(ctx, "snapshots/"+old.SnapshotID+"/internal/live_ids.parquet"); err != nil {
		t.Fatalf("the internal table is not under internal/: %v", err)
	}
	dir, err := Fetch(ctx, s, old, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(files[1].Path)
	if got, err := os.ReadFile(filepath.Join(dir, "internal", "live_ids.parquet")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("fetched internal table: %v", err)
	}
	mustPublish(t, s, newManifest(now), writeTables(t, t.TempDir(), "matches"))
	if _, err := Clean(ctx, s, CleanOptions{Retention: time.Hour, Keep: 0, Now: now}); err != nil {
		t.Fatal(err)
	}
	for _, k := range listKeys(t, s, "snapshots/") {
		if strings.Contains(k, old.SnapshotID) {
			t.Errorf("Clean left %s of the removed snapshot", k)
		}
	}
}

func TestInternalTables(t *testing.T) { eachStore(t, "eo/internal", testInternalTables) }

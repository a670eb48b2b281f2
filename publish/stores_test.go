package publish

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/store"
)

func mustGet(t *testing.T, s store.Store, key string) []byte {
	t.Helper()
	b, err := store.GetBytes(context.Background(), s, key)
	if err != nil {
		t.Fatalf("GetBytes(%q): %v", key, err)
	}
	return b
}

func mustPut(t *testing.T, s store.Store, key string, b []byte) {
	t.Helper()
	if err := store.PutBytes(context.Background(), s, key, b); err != nil {
		t.Fatalf("PutBytes(%q): %v", key, err)
	}
}

func listKeys(t *testing.T, s store.Store, prefix string) []string {
	t.Helper()
	objs, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	keys := []string{}
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

// testStore checks the Store contract; every backend must pass it.
// newTestLocal is a local store in a temporary folder.
func newTestLocal(t *testing.T) *store.Local {
	t.Helper()
	s, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// eachStore runs test on each kind of store, as subtests: memory, local (in
// a temporary folder, which it must leave without temp files) and S3 (at
// prefix; skipped without MinIO).
func eachStore(t *testing.T, prefix string, test func(t *testing.T, s store.Store)) {
	t.Run("memory", func(t *testing.T) { test(t, store.NewMemory()) })
	t.Run("local", func(t *testing.T) {
		s := newTestLocal(t)
		test(t, s)
		assertNoTempFiles(t, s.Dir())
	})
	t.Run("s3", func(t *testing.T) { test(t, newTestS3(t, prefix)) })
}

// assertNoTempFiles fails the test for a temp file left in dir (Update's
// lock file, which stays, aside).
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(d.Name(), store.TempPrefix) && d.Name() != store.UpdateLock {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
}

// A writer killed between creating and renaming its temp file (kill -9 in
// an upload) leaves it behind; Clean on a local store removes such files
// once they have not been written for an hour, and keeps a fresh one (a
// write in progress) and the update lock.
func TestCleanSweepsAbandonedTempFiles(t *testing.T) {
	ctx := context.Background()
	s := newTestLocal(t)
	mustPut(t, s, "snapshots/x/matches.parquet", []byte("PAR1"))
	if err := s.Update(ctx, "obj", func([]byte) ([]byte, error) { return []byte("x"), nil }); err != nil { // the lock file
		t.Fatal(err)
	}
	old := filepath.Join(s.Dir(), "snapshots", "x", store.TempPrefix+"odds_lines.parquet-123")
	fresh := filepath.Join(s.Dir(), "snapshots", store.TempPrefix+"latest.json-456")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := Clean(ctx, s, CleanOptions{Retention: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an abandoned temp file is still there: %v", err)
	}
	for _, p := range []string{fresh, filepath.Join(s.Dir(), store.UpdateLock)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

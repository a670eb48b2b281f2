// Package worldtest lands test input in a store, each as one raw batch: a
// synthetic world (synth) or a folder of NDJSON files. The tests of the
// pipeline, the jobs, the live market and the edge build their fixtures
// with it; the tests that query what a pipeline run exported open it with
// OpenTables.
package worldtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/synth"
	"github.com/eodata/eo/view"
)

// Land generates the synthetic world o into one batch, written under tmp,
// and lands it in st at o.Now. wrap, if not nil, stands between the
// generator and the batch: the generator adds every record to what wrap
// returns (a test keeping some records on the way).
func Land(ctx context.Context, st store.Store, o synth.Options, tmp string, wrap func(*raw.Batch) synth.Sink) error {
	b, err := raw.NewBatch(tmp, "synth", o.Now)
	if err != nil {
		return err
	}
	var sink synth.Sink = b
	if wrap != nil {
		sink = wrap(b)
	}
	if _, err := synth.Generate(ctx, o, sink); err != nil {
		return err
	}
	_, err = b.Land(ctx, st, o.Now)
	return err
}

// Local makes a local store in dir/store and lands the world o in it (see
// Land; the batch is written under dir).
func Local(ctx context.Context, dir string, o synth.Options, wrap func(*raw.Batch) synth.Sink) (*store.Local, error) {
	st, err := store.NewLocal(filepath.Join(dir, "store"))
	if err != nil {
		return nil, err
	}
	if err := Land(ctx, st, o, dir, wrap); err != nil {
		return nil, err
	}
	return st, nil
}

// LandDir lands every NDJSON file of dir (one per raw entity, named after
// it; a missing one is skipped) and the extra lines of each entity as one
// batch landed at at, and returns the batch's id.
func LandDir(t testing.TB, st store.Store, dir string, at time.Time, extra map[raw.Entity][]string) string {
	t.Helper()
	b, err := raw.NewBatch(t.TempDir(), "fixture", at)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range raw.Entities {
		body, err := os.ReadFile(filepath.Join(dir, string(e)+".ndjson"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			if line == "" {
				continue
			}
			if err := b.AddLine(e, []byte(line)); err != nil {
				t.Fatal(err)
			}
		}
		for _, line := range extra[e] {
			if err := b.AddLine(e, []byte(line)); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, err := b.Land(context.Background(), st, at)
	if err != nil {
		t.Fatal(err)
	}
	return m.BatchID
}

// Shared is a synthetic world landed (Local) in a temporary folder and what
// a test binary builds on it (a pipeline run, a published snapshot), made
// once per test binary, by the first Get.
type Shared[T any] struct {
	World  synth.Options
	Prefix string // of the temporary folder's name
	once   sync.Once
	dir    string
	v      T
	err    error
}

// Get returns the folder (the store is its "store" subfolder) and what
// build made of the store; build is called once, with the folder for its
// own files. A failure fails t, in every test that asks.
func (s *Shared[T]) Get(t testing.TB, build func(ctx context.Context, st *store.Local, dir string) (T, error)) (string, T) {
	t.Helper()
	s.once.Do(func() {
		ctx := context.Background()
		if s.dir, s.err = os.MkdirTemp("", s.Prefix); s.err != nil {
			return
		}
		st, err := Local(ctx, s.dir, s.World, nil)
		if err != nil {
			s.err = err
			return
		}
		s.v, s.err = build(ctx, st, s.dir)
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.dir, s.v
}

// Remove deletes the folder, if Get made one: TestMain calls it once the
// tests have run.
func (s *Shared[T]) Remove() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// OpenTables opens an in-memory DuckDB with a view per table file (a
// pipeline run's Report.Tables), on one connection set to UTC, closed when
// t ends. The DuckDB driver is there in every test binary that runs the
// pipeline: package pipelines registers it.
func OpenTables(t testing.TB, tables []publish.TableFile) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("SET TimeZone = 'UTC'"); err != nil {
		t.Fatal(err)
	}
	for _, tf := range tables {
		if _, err := db.Exec(fmt.Sprintf(`CREATE VIEW "%s" AS SELECT * FROM read_parquet('%s')`, tf.Name, filepath.ToSlash(tf.Path))); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// CorruptCopy copies the snapshot meta describes to a new folder with 16
// bytes of table flipped at frac of its length, and returns the folder and
// the table files to publish: the checksums Publish computes then match the
// corrupt bytes, as when a writer produced them corrupt.
func CorruptCopy(t testing.TB, meta view.Meta, table string, frac float64) (string, []publish.TableFile) {
	t.Helper()
	dst := t.TempDir()
	var files []publish.TableFile
	for _, name := range meta.Tables {
		b, err := os.ReadFile(filepath.Join(meta.Dir, meta.File(name)))
		if err != nil {
			t.Fatal(err)
		}
		if name == table {
			off := int(float64(len(b)) * frac)
			for i := range 16 {
				b[off+i] ^= 0x5a
			}
		}
		p := filepath.Join(dst, meta.File(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, publish.TableFile{Name: name, Path: p, Internal: meta.Internal(name)})
	}
	return dst, files
}

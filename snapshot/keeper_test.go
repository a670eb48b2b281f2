package snapshot

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/jobs"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/synth"
	"github.com/eodata/eo/view"
)

// The fixture: a small synthetic world run through the real pipeline and
// published to a local store, built once per test binary.
var fixture = worldtest.Shared[publish.Manifest]{World: synth.Options{Seed: 11, Now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC),
	Matches: 60}, Prefix: "eo-snapshot-fixture-"}

func TestMain(m *testing.M) {
	code := m.Run()
	fixture.Remove()
	os.Exit(code)
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// publishOnce runs the pipeline on st and publishes a snapshot.
func publishOnce(ctx context.Context, st store.Store, work string) (publish.Manifest, error) {
	r := jobs.NewRunner(jobs.Options{Pipeline: pipelines.Options{Store: st, WorkDir: work, Logger: quietLog}, Force: true})
	res, err := r.RunOnce(ctx)
	return res.Manifest, err
}

// testKeeper is a keeper of a copy of the fixture store, its snapshot
// loaded.
type testKeeper struct {
	*Keeper
	store *store.Local
}

func newTestKeeper(t *testing.T) *testKeeper {
	t.Helper()
	dir, _ := fixture.Get(t, func(ctx context.Context, st *store.Local, dir string) (publish.Manifest, error) {
		return publishOnce(ctx, st, filepath.Join(dir, "work"))
	})
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(dir, "store"))); err != nil {
		t.Fatal(err)
	}
	st, err := store.NewLocal(dst)
	if err != nil {
		t.Fatal(err)
	}
	k, err := New(Options{Store: st, CacheDir: t.TempDir(), Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &testKeeper{Keeper: k, store: st}
}

// current is the snapshot served.
func (k *testKeeper) current() *view.Snapshot { return k.Views().Load().Snapshot() }

// servedFiles are the table files of the snapshot being served, to
// publish again under a new id.
func (k *testKeeper) servedFiles(t *testing.T) []publish.TableFile {
	t.Helper()
	m := k.current().Meta
	var files []publish.TableFile
	for _, name := range m.Tables {
		files = append(files, publish.TableFile{Name: name, Path: filepath.Join(m.Dir, m.File(name)), Internal: m.Internal(name)})
	}
	return files
}

// publishNext publishes files as the next snapshot.
func (k *testKeeper) publishNext(t *testing.T, files []publish.TableFile) publish.Manifest {
	t.Helper()
	m := k.current().Meta
	man, err := publish.Publish(context.Background(), k.store, publish.Manifest{
		CreatedAt: time.Now().Add(time.Minute), SchemaVersion: m.SchemaVersion, PipelineVersion: m.PipelineVersion,
	}, files)
	if err != nil {
		t.Fatal(err)
	}
	return man
}

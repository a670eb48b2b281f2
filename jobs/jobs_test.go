package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// landFixture lands the pipeline's test fixture as one batch at at.
func landFixture(t *testing.T, st store.Store, at time.Time) {
	t.Helper()
	worldtest.LandDir(t, st, filepath.Join("..", "pipelines", "testdata", "fixture"), at, nil)
}

func newTestRunner(t *testing.T, st store.Store) *Runner {
	return NewRunner(Options{Pipeline: pipelines.Options{Store: st, WorkDir: t.TempDir()}})
}

func TestRunOncePublishesThenSkipsUntilNewBatch(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	r := newTestRunner(t, st)
	if _, err := r.RunOnce(ctx); !errors.Is(err, pipelines.ErrNoBatches) {
		t.Fatalf("empty store: got %v, want ErrNoBatches", err)
	}
	landFixture(t, st, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
	first, err := r.RunOnce(ctx)
	if err != nil || first.Skipped {
		t.Fatalf("first run: %+v %v", first, err)
	}
	p, m, err := publish.LoadLatest(ctx, st)
	if err != nil || p.SnapshotID != first.Manifest.SnapshotID || len(m.Tables) != len(pipelines.PublishedTables) {
		t.Fatalf("pointer %+v manifest tables %d err %v", p, len(m.Tables), err)
	}
	again, err := r.RunOnce(ctx)
	if err != nil || !again.Skipped || again.Manifest.SnapshotID != first.Manifest.SnapshotID {
		t.Fatalf("nothing new landed, the run must skip: %+v %v", again, err)
	}
	landFixture(t, st, time.Date(2025, 3, 11, 0, 0, 0, 0, time.UTC))
	second, err := r.RunOnce(ctx)
	if err != nil || second.Skipped || second.Manifest.SnapshotID == first.Manifest.SnapshotID {
		t.Fatalf("a new batch must trigger a run: %+v %v", second, err)
	}
}

func TestNeverTwoRunsAtOnce(t *testing.T) {
	st := store.NewMemory()
	landFixture(t, st, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
	r := newTestRunner(t, st)
	r.mu.Lock() // a run in progress
	_, err := r.RunOnce(context.Background())
	r.mu.Unlock()
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("got %v, want ErrBusy", err)
	}
	if _, err := publish.ReadPointer(context.Background(), st); !errors.Is(err, publish.ErrNoSnapshot) {
		t.Fatalf("a refused run must not publish: %v", err)
	}
}

// Two runs on one work folder at once, from two processes (eo jobs and an
// eo pipeline run by hand), emptied each other's output folder: one failed
// on the state's lock, the other could publish a mix of both. A run finds
// the folder's run lock held by another process (here flock(1)) and is
// refused with ErrBusy, publishing nothing; once the holder is gone (it was
// killed: an flock needs no clean-up), the next run publishes.
func TestNeverTwoRunsOnOneWorkFolder(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	landFixture(t, st, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
	work := t.TempDir()
	r := NewRunner(Options{Pipeline: pipelines.Options{Store: st, WorkDir: work}})
	// A run of this process holds the lock while it runs, and says who it is.
	lock, err := lockWork(work)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(work, workLock)); !strings.Contains(string(b), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("the lock file says %q, want this process's pid", b)
	}
	lock.Close()

	// -o: the lock stays with flock(1), not with the sleep it runs.
	holder := exec.Command("flock", "-o", filepath.Join(work, workLock), "sleep", "60")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() { _ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL) }
	defer kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lock, err := lockWork(work) // until flock(1) holds it
		if err != nil {
			break
		}
		lock.Close()
		if time.Now().After(deadline) {
			t.Fatal("flock(1) never took the lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = r.RunOnce(ctx)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "another process's run holds "+work) {
		t.Fatalf("a run while another process holds the work folder: %v, want ErrBusy naming it", err)
	}
	if _, err := publish.ReadPointer(ctx, st); !errors.Is(err, publish.ErrNoSnapshot) {
		t.Fatalf("a refused run must not publish: %v", err)
	}
	kill()
	_ = holder.Wait()
	// The group's last process gone, the kernel drops the lock.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		lock, err := lockWork(work)
		if err == nil {
			lock.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock outlived its holder: %v", err)
		}
	}
	res, err := r.RunOnce(ctx)
	if err != nil || res.Skipped {
		t.Fatalf("the run after the holder is gone: %+v %v", res, err)
	}
}

func TestScheduleRejectsBadSpec(t *testing.T) {
	r := newTestRunner(t, store.NewMemory())
	if err := r.Schedule(context.Background(), "not a schedule"); err == nil {
		t.Fatal("a bad cron spec must be an error")
	}
}

func TestScheduleRuns(t *testing.T) {
	st := store.NewMemory()
	landFixture(t, st, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
	r := newTestRunner(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Schedule(ctx, "@every 1s") }()
	for {
		if _, err := publish.ReadPointer(ctx, st); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the schedule never published a snapshot")
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A batch with a broken _batch.json must not block the scheduler: the run
// publishes the other batches and reports the skipped one, and the next
// tick, with nothing new landed, skips instead of re-running for it forever.
func TestBadBatchManifestDoesNotBlockRuns(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	landFixture(t, st, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
	bad := "20250311T000000.000Z-0badba"
	if err := store.PutBytes(ctx, st, raw.BatchesPrefix+bad+"/"+raw.BatchManifestName, []byte(`{"batch_id":`)); err != nil {
		t.Fatal(err)
	}
	r := newTestRunner(t, st)
	first, err := r.RunOnce(ctx)
	if err != nil || first.Skipped {
		t.Fatalf("a bad manifest blocked the run: %+v %v", first, err)
	}
	if n := first.Report.Quarantined["_batch"]["malformed _batch.json"]; n != 1 {
		t.Errorf("the skipped batch is not in the run's quarantine counts: %v", first.Report.Quarantined)
	}
	again, err := r.RunOnce(ctx)
	if err != nil || !again.Skipped {
		t.Fatalf("nothing new landed, the run must skip: %+v %v", again, err)
	}
}

// landingStore lands a fixture batch right after the first listing of the
// raw batches: between the runner's check and the pipeline's own listing.
type landingStore struct {
	store.Store
	t      *testing.T
	landed bool
}

func (s *landingStore) List(ctx context.Context, prefix string) ([]store.ObjectInfo, error) {
	objs, err := s.Store.List(ctx, prefix)
	if prefix == raw.BatchesPrefix && !s.landed {
		s.landed = true
		landFixture(s.t, s.Store, time.Date(2025, 3, 11, 0, 0, 0, 0, time.UTC))
	}
	return objs, err
}

// The snapshot's fingerprint is the batches the run read: a batch that lands
// after the runner's check is in the snapshot, so the next tick skips.
func TestFingerprintIsTheBatchesTheRunRead(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	landFixture(t, mem, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
	st := &landingStore{Store: mem, t: t}
	r := newTestRunner(t, st)
	first, err := r.RunOnce(ctx)
	if err != nil || first.Skipped {
		t.Fatalf("first run: %+v %v", first, err)
	}
	if !st.landed || len(first.Report.Batches) != 2 {
		t.Fatalf("the run read %d batches, want both (the second landed mid-run)", len(first.Report.Batches))
	}
	again, err := r.RunOnce(ctx)
	if err != nil || !again.Skipped {
		t.Fatalf("the snapshot holds every landed batch; the next run must skip: %+v %v", again, err)
	}
}

// TestCompactionDoesNotTriggerARun: a run first compacts the live batches
// of settled hours; the snapshot records the batches it stands for (their
// lineage), so compacting batches the current snapshot was built from
// does not make it stale, and the next run skips.
func TestCompactionDoesNotTriggerARun(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	at := time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)
	landFixture(t, st, at)
	for i := 0; i < 3; i++ {
		b, err := raw.NewBatch(t.TempDir(), "live", at.Add(time.Hour+time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.AddLine(raw.Streams, []byte(`{"x":1}`)); err != nil { // a quarantined line: still a line
			t.Fatal(err)
		}
		if _, err := b.Land(ctx, st, at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	now := at.Add(time.Hour + 5*time.Minute) // the live batches' hour is not settled yet
	r := NewRunner(Options{Pipeline: pipelines.Options{Store: st, WorkDir: t.TempDir()}, Now: func() time.Time { return now }})
	first, err := r.RunOnce(ctx)
	if err != nil || first.Skipped || len(first.Report.Batches) != 4 {
		t.Fatalf("first run: %+v %v", first.Report.Batches, err)
	}
	now = at.Add(3 * time.Hour)
	again, err := r.RunOnce(ctx)
	if err != nil || !again.Skipped {
		t.Fatalf("the run after the compaction: skipped=%v %v", again.Skipped, err)
	}
	bs, err := raw.ListBatches(ctx, st)
	if err != nil || len(bs) != 2 || len(bs[1].Replaces) != 3 {
		t.Fatalf("batches after the compaction: %+v %v", bs, err)
	}
}

// A slow run must not move the pointer back in time: while it ran, another
// runner on the same store (a second jobs host, an eo pipeline run with
// another work folder) published a snapshot built from a batch this run
// did not read. The slow run is skipped, the pointer stays; a run that
// starts after it reads everything and publishes.
// wantSuperseded fails the test unless res is a run that did not publish
// because the snapshot the pointer names (the other runner's) superseded
// it; it returns the pointer.
func wantSuperseded(t *testing.T, st store.Store, res Result) publish.Pointer {
	t.Helper()
	ptr, err := publish.ReadPointer(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Skipped || res.Manifest.SnapshotID != ptr.SnapshotID {
		t.Fatalf("the slow run: skipped %v, snapshot %s; the pointer names %s (the other runner's)",
			res.Skipped, res.Manifest.SnapshotID, ptr.SnapshotID)
	}
	return ptr
}

// manifestHookStore calls onManifest once, right after the first snapshot
// manifest is written through it: between a publish's upload and its
// pointer move.
type manifestHookStore struct {
	store.Store
	onManifest func()
}

func (s *manifestHookStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	err := s.Store.Put(ctx, key, r, size)
	if err == nil && strings.HasSuffix(key, "/manifest.json") && s.onManifest != nil {
		f := s.onManifest
		s.onManifest = nil
		f()
	}
	return err
}

// Another runner publishes a newer snapshot while this run uploads its own
// (after the check before the upload, before the pointer moves): the
// pointer moves by compare-and-swap, the run sees the newer snapshot there
// and does not publish, and what it uploaded is removed again.
func TestRunDoesNotPublishOverASnapshotPublishedDuringItsUpload(t *testing.T) {
	st, res := raceAtUpload(t, true)
	ptr := wantSuperseded(t, st, res)
	objs, err := st.List(context.Background(), "snapshots/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Key != publish.PointerKey && !strings.HasPrefix(o.Key, "snapshots/"+ptr.SnapshotID+"/") {
			t.Errorf("%s left in the store: only the other runner's snapshot should be (the refused one removed)", o.Key)
		}
	}
}

// Two runners that read the same batches: the one that moves the pointer
// second finds the other's snapshot there, published while it ran, and
// does not replace it with its own (older) one of the same batches.
func TestRunDoesNotReplaceASnapshotOfTheSameBatches(t *testing.T) {
	st, res := raceAtUpload(t, false)
	wantSuperseded(t, st, res)
}

// raceAtUpload runs a runner on a store with the fixture landed; once its
// manifest is uploaded (its pointer not moved yet), another runner lands
// a second batch (when land) and publishes. It returns the store and the
// first runner's result.
func raceAtUpload(t *testing.T, land bool) (store.Store, Result) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMemory()
	landFixture(t, st, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
	other := newTestRunner(t, st)
	hook := &manifestHookStore{Store: st}
	hook.onManifest = func() {
		if land {
			landFixture(t, st, time.Date(2025, 3, 11, 0, 0, 0, 0, time.UTC))
		}
		if res, err := other.RunOnce(ctx); err != nil || res.Skipped {
			t.Errorf("the other runner: skipped %v, %v", res.Skipped, err)
		}
	}
	res, err := newTestRunner(t, hook).RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st, res
}

func TestRunDoesNotPublishOverANewerSnapshot(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	landFixture(t, st, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
	other := newTestRunner(t, st)
	slow := NewRunner(Options{Pipeline: pipelines.Options{Store: st, WorkDir: t.TempDir()},
		Exec: func(ctx context.Context, o pipelines.Options) (pipelines.Report, error) {
			rep, err := pipelines.Run(ctx, o)
			// While this run finishes, a batch lands and the other runner
			// publishes it.
			landFixture(t, st, time.Date(2025, 3, 11, 0, 0, 0, 0, time.UTC))
			if _, oerr := other.RunOnce(ctx); oerr != nil {
				t.Errorf("the other runner: %v", oerr)
			}
			return rep, err
		}})
	res, err := slow.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantSuperseded(t, st, res)
	// A snapshot published before a run starts does not hold it back: a
	// batch removed from the raw area since is meant to go.
	batches, _, err := raw.ScanBatches(ctx, st)
	if err != nil || len(batches) != 2 {
		t.Fatalf("batches: %d %v", len(batches), err)
	}
	prefix := raw.BatchesPrefix + batches[1].BatchID + "/"
	objs, _ := st.List(ctx, prefix)
	for _, o := range objs {
		if err := st.Delete(ctx, o.Key); err != nil {
			t.Fatal(err)
		}
	}
	again := NewRunner(Options{Pipeline: pipelines.Options{Store: st, WorkDir: t.TempDir()}, Force: true})
	if res, err := again.RunOnce(ctx); err != nil || res.Skipped {
		t.Fatalf("a run after a batch was removed: skipped %v, %v", res.Skipped, err)
	}
}

// A run cut by its time limit at any point (in-process here: DuckDB's
// queries end with the context) fails with ErrRunTimeout, publishes
// nothing, and leaves the work folder fit for the next run, which
// publishes the same tables as a run never cut.
func TestRunTimeoutCutsARunAnywhere(t *testing.T) {
	ctx := context.Background()
	ref := store.NewMemory()
	landFixture(t, ref, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
	want, err := newTestRunner(t, ref).RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows := func(m publish.Manifest) map[string]int64 {
		out := map[string]int64{}
		for _, tb := range m.Tables {
			out[tb.Name] = tb.Rows
		}
		return out
	}
	cut := 0
	for _, limit := range []time.Duration{time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond, 600 * time.Millisecond} {
		st := store.NewMemory()
		landFixture(t, st, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
		o := Options{Pipeline: pipelines.Options{Store: st, WorkDir: t.TempDir()}, RunTimeout: limit}
		_, err := NewRunner(o).RunOnce(ctx)
		if err == nil {
			continue // the run was quicker than the limit
		}
		if !errors.Is(err, ErrRunTimeout) || !strings.Contains(err.Error(), limit.String()) {
			t.Fatalf("limit %s: %v, want ErrRunTimeout naming the limit", limit, err)
		}
		t.Logf("limit %s: %v", limit, err)
		cut++
		if _, err := publish.ReadPointer(ctx, st); !errors.Is(err, publish.ErrNoSnapshot) {
			t.Fatalf("limit %s: the cut run published (%v)", limit, err)
		}
		o.RunTimeout = 0
		got, err := NewRunner(o).RunOnce(ctx)
		if err != nil {
			t.Fatalf("limit %s: the run after the cut one: %v", limit, err)
		}
		if g, w := rows(got.Manifest), rows(want.Manifest); !maps.Equal(g, w) {
			t.Fatalf("limit %s: after a cut run the next published %v, a run never cut %v", limit, g, w)
		}
	}
	if cut == 0 {
		t.Fatal("no limit cut a run")
	}
}

// Package snapshot keeps the edge's served snapshot: it reads the store's
// pointer, fetches the snapshot it names into a local cache (every table
// checked against its manifest checksum, unchanged ones linked from a
// snapshot cached before), loads it (package view, which reads or verifies
// every table), and swaps it into the served view source (view.Current),
// rebasing the live changes it does not hold yet. The snapshot is a
// reload.Value: a failure keeps the last good one serving. A snapshot
// that cannot be loaded although its checksums match is rejected, and the
// newest good one serves instead: from the store, or from the local cache
// when the store cannot be reached at start.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eodata/eo/internal/gcpace"
	"github.com/eodata/eo/internal/tick"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/reload"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// Options configures a Keeper. Zero values take the documented defaults.
type Options struct {
	// Store is where snapshots are published. Required.
	Store store.Store
	// CacheDir keeps fetched snapshots on local disk (default a folder in
	// the system's temp folder); when the store is unreachable at start,
	// the newest good cached snapshot is served.
	CacheDir string
	// PollInterval is how often the pointer is checked for a new snapshot
	// (default 10s).
	PollInterval time.Duration
	// ReloadTimeout bounds one reload: reading the pointer, fetching and
	// loading (default 5 minutes).
	ReloadTimeout time.Duration
	// Swapped, when set, runs once each new view is served, still under
	// the view's writers' lock (the WebSocket frames a swap changed).
	Swapped func(old, cur *view.View)
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Keeper keeps the served snapshot.
type Keeper struct {
	o     Options
	log   *slog.Logger
	views view.Current
	snap  *reload.Value[view.Snapshot]
	// mu orders the reloads and their swaps.
	mu sync.Mutex
	// fromCache is set when the snapshot served came from the local cache
	// because the store was unreachable.
	fromCache atomic.Bool
	// state is what /ready reports of the store and the snapshots.
	state   state
	metrics metrics
	// release gives back what a load running beside the served view holds
	// (the relaxed collector, the extra processor) once its swap has
	// collected the garbage; fetched is what the last fetch moved. Under mu.
	release []func()
	fetched publish.FetchStats
	// verified are the tables of the snapshot loaded last, by content
	// (publish.ContentKey): a table of the next one with the same bytes
	// is not verified again. Under mu.
	verified map[string]bool
}

// New returns a keeper with nothing loaded yet: call Load or Start.
func New(o Options) (*Keeper, error) {
	if o.Store == nil {
		return nil, errors.New("snapshot: Store is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 10 * time.Second
	}
	if o.ReloadTimeout <= 0 {
		o.ReloadTimeout = 5 * time.Minute
	}
	if o.CacheDir == "" {
		o.CacheDir = filepath.Join(os.TempDir(), "eo-edge-cache")
	}
	k := &Keeper{o: o, log: o.Logger, metrics: newMetrics()}
	k.snap = reload.New(k.load)
	return k, nil
}

// Views is the served view source: the loaded snapshot and the live
// changes made since (the live path writes to it too).
func (k *Keeper) Views() *view.Current { return &k.views }

// Start loads the first snapshot, the newest good one (from the local
// cache when the store is unreachable; no snapshot anywhere is fatal), and
// then reloads every PollInterval until ctx ends.
func (k *Keeper) Start(ctx context.Context) error {
	if err := k.Load(ctx); err != nil {
		return err
	}
	go tick.Every(ctx, k.o.PollInterval, k.Load, func(err error) {
		k.metrics.reloads.Inc()
		if !errors.Is(err, tables.ErrCorrupt) { // reject logged it
			k.log.Warn("snapshot reload failed; still serving the last good snapshot", "err", err)
		}
	})
	return nil
}

// Load serves the newest published snapshot unless it is the one served
// already, bounded by Options.ReloadTimeout (a store that accepts
// connections and never answers cannot stall the reloads). On a failure
// the snapshot served stays. The first Load that finds no snapshot to
// serve fails.
//
// A snapshot that fails to load although its checksums match (corrupt
// bytes written as such, rows this build cannot index) is rejected: it is
// removed from the local cache (so a restart does not meet it again), it
// is not fetched again, and the newest good snapshot published after the
// one served is served instead; without one, the error wraps
// tables.ErrCorrupt. Any other error is the store's (unreachable, timed
// out, a transfer that failed its checksum) and the next poll retries.
func (k *Keeper) Load(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	defer k.giveBack()
	ctx, cancel := context.WithTimeout(ctx, k.o.ReloadTimeout)
	defer cancel()
	t0 := time.Now()
	serving := k.views.Load() != nil
	changed, err := k.snap.Reload(ctx)
	if !changed {
		if err == nil && k.snap.Get() == nil {
			err = errors.New("snapshot: no snapshot to serve")
		}
		return err
	}
	next := k.snap.Get()
	k.swap(next)
	k.pruneCache(next.ID)
	k.warmPresign(ctx, next)
	k.logLoaded(next, t0, serving)
	return nil
}

// giveBack releases what a load held (Keeper.release).
func (k *Keeper) giveBack() {
	for i := len(k.release) - 1; i >= 0; i-- {
		k.release[i]()
	}
	k.release = nil
}

// swap serves a newly loaded snapshot: the live changes it does not hold yet
// are carried over (rebased), in one change of the view.
func (k *Keeper) swap(next *view.Snapshot) {
	k.views.Update(func(cur *view.View) (*view.View, func()) {
		nv := view.New(next)
		if cur != nil {
			nv = cur.Rebase(next)
		}
		if k.o.Swapped == nil {
			return nv, nil
		}
		// Subscribers get the frames the new snapshot changed once it is
		// served (Current.Update).
		return nv, func() { k.o.Swapped(cur, nv) }
	})
	k.metrics.loaded(next)
	k.state.served(next.ID, next.CreatedAt)
	if miss := next.MissingTables(); len(miss) > 0 {
		// Published by an older pipeline: served, with these resources
		// empty, until a newer run publishes them.
		k.log.Warn("snapshot lacks tables this build serves; their resources are empty until a newer pipeline run publishes them",
			"snapshot", next.ID, "pipeline_version", next.Meta.PipelineVersion, "missing_tables", miss)
	}
}

// logLoaded logs a swap and collects the load's garbage (and the snapshot
// it replaced). After a swap beside a served view, this runs while the
// load still holds the extra processor and the relaxed collector: setting
// the collector back with that garbage in the heap would start a cycle at
// once anyway, and left to the relaxed setting the garbage would stay in
// the heap into the next swap. The pages are not handed back at once
// (debug.FreeOSMemory holds the heap lock while requests are served, and
// the next swap would fault the memory back in): the background scavenger, under
// the soft memory limit eo serve sets, returns what stays unused.
func (k *Keeper) logLoaded(next *view.Snapshot, t0 time.Time, serving bool) {
	elapsed := time.Since(t0)
	collect := time.Now()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	k.log.Info("snapshot loaded", "snapshot", next.ID, "matches", len(next.Matches()),
		"elapsed", elapsed.Round(time.Millisecond), "collect", time.Since(collect).Round(time.Millisecond),
		"heap_alloc_bytes", ms.HeapAlloc, "match_parts", next.MatchPartsSource(), "beside_served", serving,
		"downloaded_bytes", k.fetched.Downloaded, "reused_bytes", k.fetched.Reused, "kept_bytes", k.fetched.Kept)
}

// load is the snapshot's loader (reload.Loader): the snapshot the pointer
// names, or prev when it is the one served or was rejected before; when it
// cannot be loaded, the newest good one published after prev (or, with
// nothing served yet and the store unreachable, the newest good one
// cached).
func (k *Keeper) load(ctx context.Context, prev *view.Snapshot) (*view.Snapshot, error) {
	_, m, err := publish.LoadLatest(ctx, k.o.Store)
	if err != nil {
		k.state.storeFailed(err)
		err = fmt.Errorf("snapshot: read pointer: %w", err)
		if prev != nil {
			return nil, err
		}
		k.log.Warn("store unreachable at start; looking for a snapshot in the local cache", "err", err)
		return k.newestCached(ctx, err)
	}
	k.state.storeOK()
	if prev != nil && prev.ID == m.SnapshotID && !k.fromCache.Load() {
		return prev, nil
	}
	if k.state.isRejected(m.SnapshotID) {
		if prev != nil {
			return prev, nil // rejected earlier (logged then); waiting for a new one
		}
		return k.newestGood(ctx, prev, fmt.Errorf("snapshot %s was rejected", m.SnapshotID))
	}
	next, err := k.fetchLoad(ctx, k.o.Store, m, prev != nil)
	if err == nil || !errors.Is(err, tables.ErrCorrupt) {
		return next, err
	}
	return k.newestGood(ctx, prev, err)
}

// fetchLoad fetches m from st into the cache (verifying every table's
// checksum) and loads it. Beside a served view, the load runs on one core
// (requests keep the other: scripts/bench-swap.sh measures the p99 during
// a swap) with the collector relaxed and one processor more (see
// holdForLoad). A snapshot that fails to load although its checksums
// match is rejected.
func (k *Keeper) fetchLoad(ctx context.Context, st store.Store, m publish.Manifest, serving bool) (*view.Snapshot, error) {
	dir, fetched, err := publish.FetchCounted(ctx, st, m, k.cacheRoot())
	k.metrics.fetched(fetched)
	if err != nil {
		if st == k.o.Store {
			k.state.storeFailed(err)
		}
		return nil, fmt.Errorf("snapshot: fetch %s: %w", m.SnapshotID, err)
	}
	lo := view.LoadOptions{Verified: func(name string) bool {
		i := slices.IndexFunc(m.Tables, func(t publish.TableEntry) bool { return t.Name == name })
		return i >= 0 && k.verified[publish.ContentKey(m.Tables[i])]
	}}
	if serving {
		lo.Workers = 1
		k.holdForLoad()
	}
	next, err := view.LoadWith(ctx, dir, viewMeta(m), lo)
	if err != nil {
		if errors.Is(err, tables.ErrCorrupt) {
			k.reject(m, dir, err)
		}
		return nil, fmt.Errorf("snapshot: load %s: %w", m.SnapshotID, err)
	}
	k.fromCache.Store(st != k.o.Store)
	k.fetched = fetched
	k.verified = map[string]bool{}
	for _, t := range m.Tables {
		k.verified[publish.ContentKey(t)] = true
	}
	return next, nil
}

// holdForLoad relaxes the collector and adds a processor until the swap
// that follows the load has collected its garbage (Load gives them back).
// Each collector cycle takes a quarter of the CPU (half a core here) from
// the requests, and the load's garbage would start one every few hundred
// milliseconds; the soft memory limit still bounds the heap. The load's
// goroutine holds a processor (a P) as long as it runs, which left the
// requests one fewer for the load's length: one P more leaves them all of
// theirs, and the kernel shares the cores between the load's thread and
// theirs.
func (k *Keeper) holdForLoad() {
	if len(k.release) == 0 {
		k.release = append(k.release, gcpace.Relax(), oneMoreProc())
	}
}

// oneMoreProc raises GOMAXPROCS by one until restore is called, which
// sets it back: to the runtime's default (which then follows the CPU
// limit again) when that is what it was, else to the value it had.
func oneMoreProc() (restore func()) {
	n := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(n + 1)
	if swapProcsHook != nil {
		swapProcsHook()
	}
	return func() {
		runtime.SetDefaultGOMAXPROCS()
		if runtime.GOMAXPROCS(0) != n {
			runtime.GOMAXPROCS(n)
		}
	}
}

// swapProcsHook, when set (by tests), runs while a swap's load has its
// extra processor.
var swapProcsHook func()

// viewMeta is what the view needs of a manifest.
func viewMeta(m publish.Manifest) view.Meta {
	meta := view.Meta{ID: m.SnapshotID, CreatedAt: m.CreatedAt, PipelineVersion: m.PipelineVersion,
		SchemaVersion: m.SchemaVersion}
	for _, t := range m.Tables {
		meta.Tables = append(meta.Tables, t.Name)
		if !t.Internal {
			meta.Exports = append(meta.Exports, view.ExportTable{Name: t.Name, File: t.File, Rows: t.Rows,
				Bytes: t.Bytes, SHA256: t.SHA256})
		}
		if t.File != t.Name+".parquet" {
			if meta.Files == nil {
				meta.Files = map[string]string{}
			}
			meta.Files[t.Name] = t.File
		}
	}
	return meta
}

// warmPresign signs one URL of the served snapshot at load time, so that
// the S3 client learns the bucket's region (one call to the store, when
// EO_S3_REGION is unset) outside any request: a request's presign is then
// a signature only.
func (k *Keeper) warmPresign(ctx context.Context, s *view.Snapshot) {
	p, ok := k.o.Store.(store.Presigner)
	if !ok || len(s.Meta.Exports) == 0 {
		return
	}
	if _, err := p.PresignGet(ctx, publish.TableKey(s.ID, s.Meta.Exports[0].File), time.Minute); err != nil {
		k.log.Warn("export links: presign failed; exports are streamed from this instance until it works", "err", err)
	}
}

// Package edge is the REST and WebSocket front of the service: a Fiber app
// that routes, authenticates, meters, pages (cursors) and writes errors, and
// asks the served view (package view) for the bytes of each response. No
// request runs SQL, touches the store or takes a lock on the data: a request
// loads the current view once and reads it. Snapshots are fetched, verified,
// loaded and swapped in the background; live events change the view
// through the live path (package push).
package edge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/gcpace"
	"github.com/eodata/eo/internal/tick"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/push"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// Authenticator resolves an API key. Implementations compare in constant
// time and never log the key.
type Authenticator interface {
	Authenticate(ctx context.Context, key string) (access.Principal, error)
}

// KeyChecker is implemented by an Authenticator that can say whether a key
// it resolved earlier is still usable (access.Keyring). The WebSocket path
// checks it when a ticket is redeemed and, every second, for the open
// connections: a revoked or expired key loses them as it loses REST.
type KeyChecker interface {
	Active(keyID string) bool
}

// Options configures the edge. Zero values take the documented defaults.
type Options struct {
	// Store is where snapshots are published. Required.
	Store store.Store
	// CacheDir keeps fetched snapshots on local disk; when the store is
	// unreachable at start, the newest cached snapshot is served.
	CacheDir string
	// Auth resolves API keys. Required.
	Auth Authenticator
	// CursorSecret signs pagination cursors; every instance behind one load
	// balancer must share it. Empty: a random secret (cursors then do not
	// survive a restart).
	CursorSecret []byte
	// PollInterval is how often the pointer is checked for a new snapshot
	// (default 10s).
	PollInterval time.Duration
	// Now is the clock (default time.Now); tournament status derives from it.
	Now func() time.Time
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// AccessLog, when set, gets one line per HTTP request once its
	// response is complete (edge/accesslog.go): method, route template and
	// raw path, query (credentials redacted), status, body bytes,
	// duration, request id, key id, remote address, page cache outcome and
	// whether it was a 304. Nil (the default): no access log.
	AccessLog *slog.Logger
	// CORSOrigins are the browser origins allowed to call the API (exact
	// scheme://host[:port]); none by default.
	CORSOrigins []string
	// Meter applies plan limits and records usage; nil serves unmetered
	// (benchmarks only).
	Meter *access.Meter
	// Live configures the live path: the live feed, WebSocket tickets and
	// connections (package push). Its Now and Logger default to the
	// edge's, and its Active to Auth's when Auth is a KeyChecker.
	Live push.Options
	// MaxConns is how many connections are served at once; one more is
	// answered 503 and closed (default: the open-file limit less a
	// reserve, see connLimit).
	MaxConns int
	// ReloadTimeout bounds one snapshot reload: reading the pointer,
	// fetching and loading (default 5 minutes).
	ReloadTimeout time.Duration
	// Health are the /ready checks by name, beside "counters", which the
	// edge adds itself when metering is on (edge/health.go).
	Health map[string]HealthCheck
	// Metrics are more collectors served at /metrics (the counters
	// backend's and the usage exporter's: access.Metrics). The Meter's
	// own (access.Meter.Collectors) are added by New.
	Metrics []prometheus.Collector
}

// Server is the edge.
type Server struct {
	o       Options
	app     *fiber.App
	methods routeMethods // the methods each route answers (405 Allow)
	log     *slog.Logger
	view    view.Current
	cursors cursorCodec
	metrics *metrics
	// exportPlans are the plans whose keys may use the bulk exports.
	exportPlans map[string]bool
	loadMu      sync.Mutex
	// fromCache is set when the current snapshot came from the local cache
	// because the store was unreachable.
	fromCache atomic.Bool
	// state is what /ready reports of the store and the snapshots.
	state loadState
	// push is the live path's push side: the feed's tracker, the
	// WebSocket connections and the live changes of /changes.
	push *push.Push
	// pages is the page cache of the served view (edge/pagecache.go);
	// noPageCache turns it off (tests of the assembly path).
	pages       atomic.Pointer[pageCache]
	noPageCache bool
}

// ReadBufferSize is a connection's read buffer: room for /players?ids= with
// 500 ids in the query string.
const ReadBufferSize = 32 << 10

// WriteBufferSize is a connection's write buffer (fasthttp's default is 4
// KiB). A response whose header block and body do not fit is written in
// two system calls instead of one. The edge's header block is about 500
// bytes, against 100 for a bare handler, so a 3.9 KB match detail took
// two writes where the bare handler took one, and served 64 % of its
// rate against 84 % for a 3.6 KB detail. With 16 KiB, every response up
// to about 15.5 KB is one write. The buffer is held by each connection
// that has been answered (a 1,000-connection load holds 16 MiB).
const WriteBufferSize = 16 << 10

// New builds the edge; call Load (or Start) before serving.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.Auth == nil {
		return nil, errors.New("edge: Store and Auth are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxConns <= 0 {
		o.MaxConns = connLimit()
	}
	if o.ReloadTimeout <= 0 {
		o.ReloadTimeout = 5 * time.Minute
	}
	if o.PollInterval == 0 {
		o.PollInterval = 10 * time.Second
	}
	if o.CacheDir == "" {
		o.CacheDir = filepath.Join(os.TempDir(), "eo-edge-cache")
	}
	if len(o.CursorSecret) == 0 {
		o.CursorSecret = make([]byte, 32)
		if _, err := rand.Read(o.CursorSecret); err != nil {
			return nil, err
		}
	}
	s := &Server{o: o, log: o.Logger, cursors: newCursorCodec(o.CursorSecret), metrics: newMetrics()}
	if o.Meter != nil {
		s.exportPlans = exportPlansOf(o.Meter.Plans)
	} else {
		s.exportPlans = exportPlansOf(access.DefaultPlans())
	}
	s.app = fiber.New(fiber.Config{
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		// A request must arrive whole within ReadTimeout of the
		// connection opening (or of its first byte on a kept-alive one):
		// idle and slow (slowloris) connections are closed by then.
		ReadTimeout:     10 * time.Second,
		WriteTimeout:    30 * time.Second,
		IdleTimeout:     60 * time.Second,
		Concurrency:     o.MaxConns,
		ReadBufferSize:  ReadBufferSize,
		WriteBufferSize: WriteBufferSize,
	})
	s.app.Server().Handler = s.knownMethodsOnly(s.app.Server().Handler)
	s.push = push.New(&s.view, s.liveOptions())
	s.metrics.registerConns(func() float64 { return float64(s.app.Server().GetOpenConnectionsCount()) }, o.MaxConns)
	s.metrics.reg.MustRegister(s.push.Collectors()...)
	if o.Meter != nil {
		s.metrics.reg.MustRegister(o.Meter.Collectors()...)
	}
	s.metrics.reg.MustRegister(o.Metrics...)
	s.routes()
	return s, nil
}

// liveOptions are Options.Live with the edge's clock, logger and key
// checks where it has none of its own.
func (s *Server) liveOptions() push.Options {
	lo := s.o.Live
	if lo.Now == nil {
		lo.Now = s.o.Now
	}
	if lo.Logger == nil {
		lo.Logger = s.log
	}
	if kc, ok := s.o.Auth.(KeyChecker); ok && lo.Active == nil {
		lo.Active = kc.Active
	}
	return lo
}

// Push is the live path's push side (its tracker, the WebSocket
// connections).
func (s *Server) Push() *push.Push { return s.push }

// App exposes the Fiber app (for tests using app.Test).
func (s *Server) App() *fiber.App { return s.app }

// View returns the view being served (nil before the first load).
func (s *Server) View() *view.View { return s.view.Load() }

// Current returns the snapshot being served (nil before the first load).
func (s *Server) Current() *view.Snapshot {
	if v := s.view.Load(); v != nil {
		return v.Snapshot()
	}
	return nil
}

// swap serves a newly loaded snapshot: the live changes it does not hold yet
// are carried over (rebased), in one change of the view.
func (s *Server) swap(next *view.Snapshot) {
	s.view.Update(func(cur *view.View) (*view.View, func()) {
		nv := view.New(next)
		if cur != nil {
			nv = cur.Rebase(next)
		}
		// Subscribers get the frames the new snapshot changed once it is
		// served (Current.Update).
		return nv, func() { s.push.Swapped(cur, nv) }
	})
	s.metrics.snapshotLoaded(next)
	s.state.served(next.ID)
	if miss := next.MissingTables(); len(miss) > 0 {
		// Published by an older pipeline: served, with these resources
		// empty, until a newer run publishes them.
		s.log.Warn("snapshot lacks tables this build serves; their resources are empty until a newer pipeline run publishes them",
			"snapshot", next.ID, "pipeline_version", next.Meta.PipelineVersion, "missing_tables", miss)
	}
}

// Load fetches, verifies and loads the newest published snapshot, unless it
// is the one already served. On a failure the current snapshot stays.
//
// A snapshot that fails to load although its checksums match (corrupt
// bytes written as such, rows this build cannot index) is rejected: it is
// removed from the local cache (so a restart does not meet it again), the
// error wraps tables.ErrCorrupt, and it is not fetched again while the pointer
// names it. Any other error is the store's (unreachable, timed out, a
// transfer that failed its checksum) and the next poll retries.
func (s *Server) Load(ctx context.Context) error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	_, m, err := publish.LoadLatest(ctx, s.o.Store)
	if err != nil {
		s.state.storeFailed(err)
		return fmt.Errorf("edge: read pointer: %w", err)
	}
	if cur := s.Current(); cur != nil && cur.ID == m.SnapshotID && !s.fromCache.Load() {
		s.state.storeOK()
		return nil
	}
	if id, _ := s.state.rejected(); id == m.SnapshotID {
		s.state.storeOK()
		return nil // rejected earlier (logged then); waiting for a new one
	}
	t0 := time.Now()
	dir, fetched, err := publish.FetchCounted(ctx, s.o.Store, m, s.cacheRoot())
	s.metrics.snapshotFetched(fetched)
	if err != nil {
		s.state.storeFailed(err)
		return fmt.Errorf("edge: fetch snapshot %s: %w", m.SnapshotID, err)
	}
	s.state.storeOK()
	// While a view is served, the next loads on one core: requests keep
	// the other (scripts/bench-swap.sh measures the p99 during a swap).
	var lo view.LoadOptions
	if s.view.Load() != nil {
		lo.Workers = 1
		// And the collector runs less often while it loads: each cycle
		// takes a quarter of the CPU (half a core here) from the requests,
		// and the load's garbage would start one every few hundred
		// milliseconds. The soft memory limit still bounds the heap.
		defer gcpace.Relax()()
		// The load's goroutine holds a processor (a P) as long as it
		// runs, which left the requests one fewer for the load's length.
		// One P more while it loads leaves them all of theirs, and the
		// kernel shares the cores between the load's thread and theirs.
		defer oneMoreProc()()
	}
	next, err := view.LoadWith(ctx, dir, viewMeta(m), lo)
	if err != nil {
		if errors.Is(err, tables.ErrCorrupt) {
			s.reject(m.SnapshotID, dir, err)
		}
		return fmt.Errorf("edge: load snapshot %s: %w", m.SnapshotID, err)
	}
	s.swap(next)
	s.fromCache.Store(false)
	s.pruneCache(m.SnapshotID)
	s.warmPresign(ctx, m)
	elapsed := time.Since(t0)
	if lo.Workers == 0 {
		s.log.Info("snapshot loaded", "snapshot", m.SnapshotID, "matches", len(next.Matches()),
			"elapsed", elapsed.Round(time.Millisecond), "heap_bytes", collectLoadGarbage(), "match_parts", next.MatchPartsSource(),
			"downloaded_bytes", fetched.Downloaded, "reused_bytes", fetched.Reused, "kept_bytes", fetched.Kept)
		return nil
	}
	// A swap collects the load's garbage (and the snapshot it replaced)
	// while it still has the extra processor and the relaxed collector. Setting the collector back
	// with that garbage in the heap would start a cycle at once anyway;
	// left to the relaxed setting, the garbage stayed in the heap into
	// the next swap (5,000 matches: 0.6-1.2 GB of heap after a few swaps
	// against 0.2-0.45 GB, scripts/bench-swap.sh). The pages are not
	// handed back at once as after the first load (debug.FreeOSMemory
	// holds the heap lock for tens of milliseconds while requests are
	// served): the background scavenger, under the soft memory limit
	// eo serve sets, returns what stays unused.
	collect := time.Now()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.log.Info("snapshot loaded", "snapshot", m.SnapshotID, "matches", len(next.Matches()),
		"elapsed", time.Since(t0).Round(time.Millisecond), "collect", time.Since(collect).Round(time.Millisecond),
		"heap_alloc_bytes", ms.HeapAlloc, "match_parts", next.MatchPartsSource(),
		"downloaded_bytes", fetched.Downloaded, "reused_bytes", fetched.Reused, "kept_bytes", fetched.Kept)
	return nil
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

// reject records a snapshot that cannot be served and removes its cached
// copy.
func (s *Server) reject(id, dir string, err error) {
	s.state.reject(id, err)
	s.state.storeOK() // the store answered; the snapshot is bad
	s.metrics.snapshotRejected()
	if rerr := os.RemoveAll(dir); rerr != nil {
		s.log.Warn("remove rejected snapshot from the cache", "snapshot", id, "err", rerr)
	}
	s.log.Error("snapshot rejected: it cannot be loaded although its checksums match; still serving the last good snapshot",
		"snapshot", id, "err", err)
}

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

// collectLoadGarbage collects the garbage of the first snapshot load
// (Parquet readers, row structs, render buffers: several times the
// snapshot's own size) before anything is served, and reports the live
// heap. The freed pages are not handed back to the OS at once
// (debug.FreeOSMemory did): the next swap allocates as much again, and
// faulting that memory back in, under full load, made the first swap the
// slowest (its p99 5-7x the steady one against 2.5-3x for the later ones,
// scripts/bench-swap.sh). The background scavenger returns what stays
// unused, and the soft memory limit bounds it.
func collectLoadGarbage() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// loadCached serves the newest snapshot in the local cache whose files match
// their manifest checksums and load; why is the failure that led here.
func (s *Server) loadCached(ctx context.Context, why error) error {
	local, err := store.NewLocal(s.o.CacheDir)
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(s.cacheRoot())
	if err != nil {
		return err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() > ents[j].Name() })
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.cacheRoot(), e.Name(), "manifest.json"))
		if err != nil {
			continue
		}
		var m publish.Manifest
		if err := json.Unmarshal(b, &m); err != nil || m.SnapshotID != e.Name() {
			continue
		}
		// The cache is laid out like a store (snapshots/<id>/...), so
		// fetching from it onto itself verifies every checksum.
		dir, err := publish.Fetch(ctx, local, m, s.cacheRoot())
		if err != nil {
			s.log.Warn("cached snapshot unusable", "snapshot", m.SnapshotID, "err", err)
			continue
		}
		next, err := view.Load(ctx, dir, viewMeta(m))
		if err != nil {
			if errors.Is(err, tables.ErrCorrupt) {
				s.reject(m.SnapshotID, dir, err)
			} else {
				s.log.Warn("cached snapshot unusable", "snapshot", m.SnapshotID, "err", err)
			}
			continue
		}
		s.swap(next)
		s.fromCache.Store(true)
		s.log.Warn("serving the newest good snapshot cached on local disk", "snapshot", m.SnapshotID, "because", why)
		return nil
	}
	return errors.New("edge: no usable cached snapshot")
}

// cacheRoot is where fetched snapshots live: CacheDir/snapshots/<id>/, the
// same layout as a Local store rooted at CacheDir.
func (s *Server) cacheRoot() string { return filepath.Join(s.o.CacheDir, "snapshots") }

// pruneCache keeps only the served snapshot and one previous in the cache,
// and removes the temp files of fetches cut short an hour or more ago (an
// edge killed mid-download).
func (s *Server) pruneCache(keep string) {
	ents, err := os.ReadDir(s.cacheRoot())
	if err != nil {
		return
	}
	if n, err := store.SweepTemp(s.cacheRoot(), time.Now().Add(-time.Hour)); err != nil || n > 0 {
		s.log.Info("snapshot cache: temp files of cut fetches removed", "files", n, "err", err)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != keep {
			dirs = append(dirs, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for i, d := range dirs {
		if i >= 1 {
			os.RemoveAll(filepath.Join(s.cacheRoot(), d))
		}
	}
}

// Start loads the first snapshot (falling back to the local cache when the
// store is unreachable; a failure of both is fatal) and then watches the
// pointer until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if err := s.loadWithTimeout(ctx); err != nil {
		if errors.Is(err, tables.ErrCorrupt) {
			s.log.Error("the published snapshot is corrupt; looking for a good one in the local cache", "err", err)
		} else {
			s.log.Warn("store unreachable at start; looking for a snapshot in the local cache", "err", err)
		}
		if cerr := s.loadCached(ctx, err); cerr != nil {
			return fmt.Errorf("%w (and %v)", err, cerr)
		}
	}
	s.push.Start(ctx)
	go s.watch(ctx)
	return nil
}

// loadWithTimeout is Load bounded by Options.ReloadTimeout, so a store that
// hangs (accepts connections, never answers) cannot stall the reload loop:
// the attempt fails, is logged and counted, and the next poll tries again.
func (s *Server) loadWithTimeout(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.ReloadTimeout)
	defer cancel()
	return s.Load(ctx)
}

// watch reloads every PollInterval; a failure keeps the served snapshot.
// (The snapshot's atomic swap is the view's: swap rebases the live changes
// onto the new snapshot in the same change.)
func (s *Server) watch(ctx context.Context) {
	tick.Every(ctx, s.o.PollInterval, s.loadWithTimeout, func(err error) {
		s.metrics.reloadFailed()
		if !errors.Is(err, tables.ErrCorrupt) { // reject logged it
			s.log.Warn("snapshot reload failed; still serving the last good snapshot", "err", err)
		}
	})
}

// Serve listens on ln until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	ln = &guardListener{Listener: ln, log: s.log, errs: &s.metrics.acceptErrs}
	go func() { errc <- s.app.Listener(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return s.app.ShutdownWithContext(sctx)
	}
}

// nextRecovering runs the rest of the request's handlers, turning a panic
// into the internal_error envelope.
func (s *Server) nextRecovering(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic", "request_id", requestID(c), "path", c.Path(), "panic", r, "stack", string(debug.Stack()))
			err = &APIError{Status: fiber.StatusInternalServerError, Code: "internal_error", Message: "internal error"}
		}
	}()
	return c.Next()
}

// Package edge is the HTTP front of the service: a Fiber app that routes,
// authenticates, meters, pages (cursors) and writes errors, and asks the
// served view (package view) for the bytes of each response. No request
// runs SQL, touches the store or takes a lock on the data: a request loads
// the current view once and reads it. The edge mounts the snapshot keeper
// (package snapshot: fetch, verify, load, swap), whose view source it
// serves, and the push side (package push: the live feed's tracker and the
// WebSocket connections), to which it hands each upgraded connection.
package edge

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/cursor"
	"github.com/eodata/eo/pagecache"
	"github.com/eodata/eo/push"
	"github.com/eodata/eo/snapshot"
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
	// Snapshots configures the snapshot keeper (package snapshot); its
	// Store, where snapshots are published, is required. Its Logger
	// defaults to the edge's.
	Snapshots snapshot.Options
	// Auth resolves API keys. Required.
	Auth Authenticator
	// CursorSecret signs pagination cursors; every instance behind one load
	// balancer must share it. Empty: a random secret (cursors then do not
	// survive a restart).
	CursorSecret []byte
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
	// view is the served view source (snaps' Views): the snapshot and the
	// live changes made since.
	view    *view.Current
	snaps   *snapshot.Keeper
	cursors cursor.Codec
	metrics *metrics
	// exportPlans are the plans whose keys may use the bulk exports.
	exportPlans map[string]bool
	// push is the live path's push side: the feed's tracker, the
	// WebSocket connections and the live changes of /changes.
	push *push.Push
	// pages is the page cache of the served view (package pagecache);
	// noPageCache turns it off (tests of the assembly path).
	pages       pagecache.Holder
	noPageCache bool
}

// ReadBufferSize is a connection's read buffer: room for /players?ids= with
// 500 ids in the query string.
const ReadBufferSize = 32 << 10

// WriteBufferSize is a connection's write buffer (fasthttp's default is 4
// KiB): a response whose header block and body do not fit is written in
// two system calls instead of one, and with 16 KiB every response up to
// about 15.5 KB is one. Each connection answered holds one.
const WriteBufferSize = 16 << 10

// New builds the edge; call Load (or Start) before serving.
func New(o Options) (*Server, error) {
	if o.Snapshots.Store == nil || o.Auth == nil {
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
	if len(o.CursorSecret) == 0 {
		o.CursorSecret = make([]byte, 32)
		if _, err := rand.Read(o.CursorSecret); err != nil {
			return nil, err
		}
	}
	s := &Server{o: o, log: o.Logger, cursors: cursor.NewCodec(o.CursorSecret), metrics: newMetrics()}
	plans := access.DefaultPlans()
	if o.Meter != nil {
		plans = o.Meter.Plans
	}
	s.exportPlans = exportPlansOf(plans)
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
	var err error
	so := o.Snapshots
	so.Swapped = func(old, cur *view.View) {
		s.pages.Swapped(cur)
		s.push.Swapped(old, cur)
	}
	if so.Logger == nil {
		so.Logger = o.Logger
	}
	s.snaps, err = snapshot.New(so)
	if err != nil {
		return nil, err
	}
	s.view = s.snaps.Views()
	s.push = push.New(s.view, s.liveOptions(plans))
	s.metrics.registerConns(func() float64 { return float64(s.app.Server().GetOpenConnectionsCount()) }, o.MaxConns)
	s.metrics.reg.MustRegister(s.push.Collectors()...)
	s.metrics.reg.MustRegister(s.snaps.Collectors()...)
	if o.Meter != nil {
		s.metrics.reg.MustRegister(o.Meter.Collectors()...)
	}
	s.metrics.reg.MustRegister(o.Metrics...)
	s.routes()
	return s, nil
}

// liveOptions are Options.Live with the edge's clock, logger, key checks
// and the plans' connection caps where it has none of its own.
func (s *Server) liveOptions(plans map[string]access.PlanLimits) push.Options {
	lo := s.o.Live
	if lo.ConnLimits == nil {
		lo.ConnLimits = map[string]int{}
		for name, pl := range plans {
			lo.ConnLimits[name] = pl.WSConnections
		}
	}
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

// Load serves the newest published snapshot unless it is served already
// (snapshot.Keeper.Load).
func (s *Server) Load(ctx context.Context) error { return s.snaps.Load(ctx) }

// Start serves the newest good snapshot (no snapshot anywhere is fatal),
// then keeps it new and the live path subscribed until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if err := s.snaps.Start(ctx); err != nil {
		return err
	}
	s.push.Start(ctx)
	return nil
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

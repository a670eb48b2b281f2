package edge

// Benchmarks of the request path (BENCHMARKS.md, "## Edge" and "## Access"):
//
//	go test -run '^$' -bench . -benchmem ./edge
//
// BenchmarkMeterCheck and BenchmarkMeterRecord measure the metering calls one
// request makes, on the embedded (bbolt) and Redis backends (a real
// redis-server via access/redistest; skipped without the binary).
// BenchmarkAuth measures the API-key lookup (keyring and store). BenchmarkListMatches drives
// GET /v1/cs2/matches?limit=50 through the Fiber handler in memory (a
// fasthttp.RequestCtx, no sockets) on the edge and on a bare Fiber handler
// that returns the same bytes.

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/redistest"
	"github.com/eodata/eo/snapshot"
)

const benchEndpoint = "GET /v1/{game}/matches"

// benchCounters opens one metering backend for a benchmark.
func benchCounters(b *testing.B, backend string) access.Counters {
	b.Helper()
	var (
		c   access.Counters
		err error
	)
	switch backend {
	case "embedded":
		// Flushed every 20 ms: a loop here records events ten times as
		// fast as a server does, and at the default 200 ms its buffer
		// would outgrow the one a flush keeps and be regrown every flush
		// (a cost eo serve does not pay at its rates).
		c, err = access.OpenEmbedded(filepath.Join(b.TempDir(), "counters.db"), 20*time.Millisecond)
	case "redis":
		c, err = access.OpenRedis(context.Background(), redistest.Start(b), "eo:")
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// benchPlans are the default plans with the internal plan's limits raised
// out of reach (as EO_PLANS does for load tests): the internal plan's 100,000
// tokens/s would run dry in a loop that checks faster than that, and every
// Check in the loop must take the common path (allowed: a token and a quota
// unit drawn).
func benchPlans() map[string]access.PlanLimits {
	p := access.DefaultPlans()
	p[access.PlanInternal] = access.PlanLimits{Burst: 1e12, Rate: 1e12, MonthlyQuota: 1 << 60}
	return p
}

// benchPrincipal is an internal-plan key.
var benchPrincipal = access.Principal{KeyID: "k-bench", AccountID: "a-bench", Plan: access.PlanInternal,
	Display: "eo_live_…beef"}

// BenchmarkMeterCheck: access.Meter.Check, the bucket token + monthly quota
// draw (and the headers) of one metered request.
func BenchmarkMeterCheck(b *testing.B) {
	for _, backend := range []string{"embedded", "redis"} {
		b.Run(backend, func(b *testing.B) {
			m := &access.Meter{C: benchCounters(b, backend), Plans: benchPlans(), Now: time.Now}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				d, err := m.Check(ctx, benchPrincipal, benchEndpoint, true)
				if err != nil || d.Code != "" {
					b.Fatalf("check: %v %q", err, d.Code)
				}
			}
		})
	}
}

// BenchmarkMeterRecord: the usage event every authenticated request records
// after its handler (edge/middleware.go authenticate).
func BenchmarkMeterRecord(b *testing.B) {
	for _, backend := range []string{"embedded", "redis"} {
		b.Run(backend, func(b *testing.B) {
			c := benchCounters(b, backend)
			ctx := context.Background()
			ev := access.UsageEvent{KeyID: benchPrincipal.KeyID, AccountID: benchPrincipal.AccountID,
				Endpoint: benchEndpoint, Status: 200, RequestID: "0123456789abcdef0123456789abcdef"}
			b.ReportAllocs()
			for b.Loop() {
				ev.Time = time.Now().UTC()
				if err := c.Record(ctx, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchKeys creates an access database with one internal-plan key and
// returns its path and the key (the database is closed, as `eo keys`
// leaves it).
func benchKeys(b testing.TB) (string, string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "access.db")
	st, err := access.Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	key := newTestKey(b, st, access.PlanInternal)
	return path, key
}

// benchKeyring is what eo serve authenticates with: the keys in memory.
func benchKeyring(b testing.TB) (*access.Keyring, string) {
	b.Helper()
	path, key := benchKeys(b)
	kr, err := access.OpenKeyring(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	return kr, key
}

// BenchmarkAuth: resolving a presented API key. keyring: access.Keyring
// (what eo serve uses: SHA-256 and a map lookup); store:
// access.Store.Authenticate (hash, bbolt read transaction, JSON decode), the
// read-write store `eo keys` uses.
func BenchmarkAuth(b *testing.B) {
	ctx := context.Background()
	b.Run("keyring", func(b *testing.B) {
		kr, key := benchKeyring(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := kr.Authenticate(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store", func(b *testing.B) {
		path, key := benchKeys(b)
		st, err := access.Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.Authenticate(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// inMemory runs requests through a Fiber app's fasthttp handler without a
// connection.
type inMemory struct {
	h   fasthttp.RequestHandler
	ctx fasthttp.RequestCtx
}

func newInMemory(app *fiber.App, uri, key string) *inMemory {
	var req fasthttp.Request
	req.Header.SetMethod(fiber.MethodGet)
	req.SetRequestURI(uri)
	if key != "" {
		req.Header.Set(fiber.HeaderAuthorization, "Bearer "+key)
	}
	im := &inMemory{h: app.Handler()}
	im.ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
	return im
}

func (im *inMemory) do() *fasthttp.Response {
	im.ctx.Response.Reset()
	im.ctx.ResetUserValues() // as the server does between requests
	im.h(&im.ctx)
	return &im.ctx.Response
}

// meteredBenchServer is the fixture edge as eo serve runs it: keyring
// authentication and a Meter on the backend's counters (internal plan).
func meteredBenchServer(b *testing.B, keys *access.Keyring, backend string) *Server {
	srv, err := New(Options{Snapshots: snapshot.Options{Store: fixtureStore(b), CacheDir: b.TempDir()}, Auth: keys,
		CursorSecret: []byte("test-secret"), Now: func() time.Time { return fixtureNow }, Logger: quietLog,
		Meter: &access.Meter{C: benchCounters(b, backend), Plans: benchPlans(), Accounts: keys, Now: time.Now}})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	return srv
}

// bareFiber is the baseline the edge is measured against: a Fiber app with
// the edge's buffer sizes whose one handler returns body as JSON (as eo
// bench-bare does on the wire).
func bareFiber(body []byte) *fiber.App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
		ReadBufferSize: ReadBufferSize, WriteBufferSize: WriteBufferSize})
	app.Get("/*", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(body)
	})
	return app
}

// BenchmarkListMatches: GET /v1/cs2/matches?limit=50 through the handler in
// memory. edge: the fixture server (test authenticator, no metering: the
// handler + middleware cost; the page from the page cache after the second
// request); edge-assembled: the same with the page assembled every time; edge-metered: the same with access.Keyring
// authentication and the embedded Meter (internal plan), as eo serve runs;
// edge-metered-redis: the same with the Redis backend (a local redis-server);
// bare: a Fiber app with the edge's config and one handler returning the
// edge's response bytes.
func BenchmarkListMatches(b *testing.B) {
	const uri = "/v1/cs2/matches?limit=50"
	ts := newTestServer(b)
	edge := newInMemory(ts.App(), uri, goodKey)
	resp := edge.do()
	if resp.StatusCode() != fiber.StatusOK {
		b.Fatalf("edge: status %d: %s", resp.StatusCode(), resp.Body())
	}
	body := bytes.Clone(resp.Body())

	keys, key := benchKeyring(b)
	meteredOn := func(backend string) *inMemory {
		im := newInMemory(meteredBenchServer(b, keys, backend).App(), uri, key)
		if r := im.do(); r.StatusCode() != fiber.StatusOK {
			b.Fatalf("edge-metered-%s: status %d: %s", backend, r.StatusCode(), r.Body())
		}
		return im
	}
	meteredReq := meteredOn("embedded")
	meteredRedis := meteredOn("redis")

	bare := newInMemory(bareFiber(body), uri, goodKey)
	// The page assembled on every request (no page cache), as for a client
	// paging with cursors.
	assembled := newTestServer(b)
	assembled.noPageCache = true
	edgeAssembled := newInMemory(assembled.App(), uri, goodKey)

	for _, bc := range []struct {
		name string
		im   *inMemory
	}{{"edge", edge}, {"edge-assembled", edgeAssembled}, {"edge-metered", meteredReq}, {"edge-metered-redis", meteredRedis}, {"bare", bare}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if r := bc.im.do(); r.StatusCode() != fiber.StatusOK {
					b.Fatalf("status %d", r.StatusCode())
				}
			}
		})
	}
}

// BenchmarkListMatchesParallel: BenchmarkListMatches's edge-metered and bare
// requests from GOMAXPROCS goroutines at once, each with its own request
// context: what the shared state a request writes (meter, counters, usage
// buffer, metrics) costs when cores contend for it. Compare its ns/op
// ratio to the sequential benchmark's.
func BenchmarkListMatchesParallel(b *testing.B) {
	const uri = "/v1/cs2/matches?limit=50"
	keys, key := benchKeyring(b)
	srv := meteredBenchServer(b, keys, "embedded")
	first := newInMemory(srv.App(), uri, key).do()
	if first.StatusCode() != fiber.StatusOK {
		b.Fatalf("status %d: %s", first.StatusCode(), first.Body())
	}
	bareApp := bareFiber(bytes.Clone(first.Body()))
	for _, bc := range []struct {
		name string
		app  *fiber.App
	}{{"edge-metered", srv.App()}, {"bare", bareApp}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				im := newInMemory(bc.app, uri, key)
				for pb.Next() {
					if r := im.do(); r.StatusCode() != fiber.StatusOK {
						b.Errorf("status %d", r.StatusCode())
						return
					}
				}
			})
		})
	}
}

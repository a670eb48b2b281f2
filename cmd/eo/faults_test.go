package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/miniotest"
	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/redistest"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/store"
)

// TestMain lets a test run this binary as the eo command in a child process
// (EO_TEST_EXEC_MAIN=1), so fault tests can kill, freeze or starve a real
// edge process without a separate build; and it is the pipeline child
// (`eo pipeline step`, childPipeline) of an eo up or eo jobs run in this
// binary.
func TestMain(m *testing.M) {
	if os.Getenv("EO_TEST_EXEC_MAIN") == "1" || len(os.Args) > 2 && os.Args[1] == "pipeline" && os.Args[2] == "step" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// world is a small published world shared by the fault tests of this
// package: a store folder with one snapshot.
var world struct {
	once  sync.Once
	dir   string
	store string
	err   error
}

func sharedWorld(t *testing.T) string {
	t.Helper()
	world.once.Do(func() {
		world.dir, world.err = os.MkdirTemp("", "eo-cmd-world-")
		if world.err != nil {
			return
		}
		world.store = filepath.Join(world.dir, "store")
		work := filepath.Join(world.dir, "work")
		ctx := context.Background()
		if world.err = run(ctx, []string{"generate", "--store", world.store, "--work", work, "--matches", "120", "--now", "2026-06-01T12:00:00Z"}); world.err != nil {
			return
		}
		if world.err = run(ctx, []string{"pipeline", "run", "--store", world.store, "--work", work}); world.err != nil {
			return
		}
	})
	if world.err != nil {
		t.Fatal(world.err)
	}
	return world.store
}

// edgeProc is an `eo serve` child process.
type edgeProc struct {
	cmd    *exec.Cmd
	addr   string
	key    string
	work   string
	out    *proctest.Buffer
	exited chan error
}

// startEdge runs `eo serve` on store in a child process whose open-file
// limit is nofile (0: inherited), with a fresh work folder holding a
// standard key, and waits for /ready. env adds variables.
func startEdge(t *testing.T, store string, nofile int, env ...string) *edgeProc {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	key := workKeys(t, work, access.PlanStandard)[0]
	return startEdgeIn(t, store, work, key, nofile, env...)
}

// workKeys creates the work folder's key file with a key of each plan, each
// on its own account, as `eo keys` would, and returns the keys.
func workKeys(t *testing.T, work string, plans ...string) []string {
	t.Helper()
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := access.Open(filepath.Join(work, "access.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys, _ := createKeys(t, st, plans...)
	return keys
}

// createKeys creates in st an account with one key for each plan (a trial
// key's account in a 7-day trial), and returns the keys and their ids, in
// plans' order.
func createKeys(t *testing.T, st *access.Store, plans ...string) (keys, ids []string) {
	t.Helper()
	for _, plan := range plans {
		days := 0
		if plan == access.PlanTrial {
			days = 7
		}
		acct, err := st.CreateAccount(plan+" test", days)
		if err != nil {
			t.Fatal(err)
		}
		k, rec, err := st.CreateKey(acct.ID, plan)
		if err != nil {
			t.Fatal(err)
		}
		keys, ids = append(keys, k), append(ids, rec.ID)
	}
	return keys, ids
}

func startEdgeIn(t *testing.T, store, work, key string, nofile int, env ...string) *edgeProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	plans := filepath.Join(work, "plans.json")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plans, []byte(`{"standard": {"burst": 1000000, "rate": 1000000, "monthly_quota": 1000000000}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env = append([]string{"EO_PLANS=" + plans, "EO_USAGE_EXPORT_INTERVAL=1h"}, env...)
	p := startEO(t, nofile, env, "serve", "--store", store, "--work", work, "--addr", addr)
	p.addr, p.key, p.work = addr, key, work
	deadline := time.Now().Add(60 * time.Second)
	for {
		if code, _ := p.get("/ready", ""); code == 200 {
			return p
		}
		if !p.alive() {
			t.Fatalf("eo serve exited at start:\n%s", p.out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("eo serve never answered /ready:\n%s", p.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startEO runs `eo args...` (this test binary as the eo command) in a child
// process whose open-file limit is nofile (0: inherited), with env added to
// the environment (later values win). It is stopped with SIGTERM when the
// test ends, and killed with the test binary.
func startEO(t *testing.T, nofile int, env []string, args ...string) *edgeProc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := `exec "$0" "$@"`
	if nofile > 0 {
		script = fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, nofile)
	}
	cmd := exec.Command("sh", append([]string{"-c", script, self}, args...)...)
	cmd.Env = append(append(os.Environ(), "EO_TEST_EXEC_MAIN=1"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test binary
	p := &edgeProc{cmd: cmd, out: &proctest.Buffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if p.alive() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited: //nolint:errcheck // its exit status is the test's business, not the cleanup's
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-p.exited //nolint:errcheck // killed: its exit status says only that
			}
		}
		if t.Failed() {
			t.Logf("eo %s output:\n%s", args[0], p.out)
		}
	})
	return p
}

func (p *edgeProc) alive() bool {
	select {
	case err := <-p.exited:
		p.exited <- err // keep it for the next caller
		return false
	default:
		return true
	}
}

var noKeepAlive = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// get sends one request on a new connection (key "" for none).
func (p *edgeProc) get(path, key string) (int, []byte) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestConnectionFloodDoesNotStopTheEdge: idle unauthenticated connections
// beyond the open-file limit used to make `eo serve` exit (fasthttp stops
// on accept4: too many open files). Now connections over the limit are
// shed with a 503, the process stays up, and once the flood ends it serves
// /health and keyed requests again.
func TestConnectionFloodDoesNotStopTheEdge(t *testing.T) {
	store := sharedWorld(t)
	p := startEdge(t, store, 256)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	shed := 0
	for i := 0; i < 600; i++ {
		c, err := net.DialTimeout("tcp", p.addr, 2*time.Second)
		if err != nil {
			continue // the backlog is full: the kernel refuses, the edge lives
		}
		conns = append(conns, c)
	}
	// A connection over the limit is answered 503 and closed at once.
	for _, c := range conns[len(conns)-20:] {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil && resp.StatusCode == 503 {
			shed++
		}
	}
	time.Sleep(500 * time.Millisecond)
	if !p.alive() {
		t.Fatalf("eo serve exited under %d idle connections:\n%s", len(conns), p.out)
	}
	if shed == 0 {
		t.Errorf("no connection over the limit was answered 503")
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	deadline := time.Now().Add(20 * time.Second)
	for {
		hc, _ := p.get("/health", "")
		kc, _ := p.get("/v1/cs2/matches?limit=1", p.key)
		if hc == 200 && kc == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the flood: /health %d, keyed %d", hc, kc)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(p.out.String(), "edge listening") {
		t.Errorf("unexpected output:\n%s", p.out)
	}
}

// TestEdgeRidesOutStoreFaults runs the pipeline and a real `eo serve` on a
// real MinIO and breaks MinIO under them:
//   - frozen (SIGSTOP): `eo pipeline run` fails within its timeouts instead
//     of blocking in publish for minutes; the edge keeps serving and its
//     reload attempts fail and are logged instead of stalling silently;
//   - killed (kill -9) and the edge restarted: it serves the verified
//     snapshot in its local cache (it used to exit at start);
//   - back: the next pipeline run publishes and the edge loads it.
func TestEdgeRidesOutStoreFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO, runs the pipeline three times")
	}
	srv := miniotest.Start(t)
	ctx := context.Background()
	if _, err := store.NewS3(ctx, store.S3Options{Endpoint: srv.Endpoint, Bucket: "eo-faults", AccessKey: miniotest.AccessKey,
		SecretKey: miniotest.SecretKey, CreateBucket: true}); err != nil {
		t.Fatal(err)
	}
	env := []string{"EO_S3_ENDPOINT=" + srv.Endpoint, "EO_S3_ACCESS_KEY=" + miniotest.AccessKey,
		"EO_S3_SECRET_KEY=" + miniotest.SecretKey, "EO_S3_IO_TIMEOUT=1s", "EO_S3_MAX_RETRIES=2"}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	const location = "s3://eo-faults/world"
	pwork := filepath.Join(t.TempDir(), "pipeline")
	pipeline := func() error {
		return run(ctx, []string{"pipeline", "run", "--store", location, "--work", pwork})
	}
	if err := run(ctx, []string{"generate", "--store", location, "--work", t.TempDir(), "--matches", "60", "--now", "2026-06-01T12:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	if err := pipeline(); err != nil {
		t.Fatal(err)
	}
	p := startEdge(t, location, 0, append(env, "EO_POLL_INTERVAL=500ms")...)

	// Frozen.
	srv.Freeze()
	if err := miniotest.Within(t, 2*time.Minute, "eo pipeline run with MinIO frozen", pipeline); err == nil {
		t.Fatal("eo pipeline run with MinIO frozen succeeded")
	}
	if code, body := p.get("/v1/cs2/matches?limit=1", p.key); code != 200 {
		t.Fatalf("edge with MinIO frozen: %d %s", code, body)
	}
	waitFor(t, p, "snapshot reload failed")
	if code, body := p.get("/ready", ""); code != 200 || !strings.Contains(string(body), `"status":"degraded"`) ||
		!strings.Contains(string(body), `"store":{"ok":false`) {
		t.Fatalf("/ready with MinIO frozen: %d %s", code, body)
	}
	srv.Thaw()

	// Killed, and the edge restarted.
	srv.Kill()
	p.stop(t)
	p2 := startEdgeIn(t, location, p.work, p.key, 0, append(env, "EO_POLL_INTERVAL=500ms")...)
	if code, body := p2.get("/v1/cs2/matches?limit=1", p2.key); code != 200 {
		t.Fatalf("edge restarted with MinIO down: %d %s", code, body)
	}
	waitFor(t, p2, "store unreachable at start")

	// Back.
	if err := srv.Relaunch(); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"generate", "--store", location, "--work", t.TempDir(), "--matches", "61", "--now", "2026-06-02T12:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	if err := pipeline(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, location, store.S3Options{Endpoint: srv.Endpoint, AccessKey: miniotest.AccessKey,
		SecretKey: miniotest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	ptr, err := publish.ReadPointer(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, p2, `msg="snapshot loaded" snapshot=`+ptr.SnapshotID)
}

// waitFor waits up to 30 s for the edge's output to contain s.
func waitFor(t *testing.T, p *edgeProc, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the edge never logged %q:\n%s", s, p.out)
		}
		if !p.alive() {
			t.Fatalf("the edge exited:\n%s", p.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the edge with SIGTERM and waits for it.
func (p *edgeProc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err // alive() reads it too
	case <-time.After(20 * time.Second):
		t.Fatal("eo serve did not stop on SIGTERM")
	}
}

// TestLiveRedisClientIsBounded: the live path's Redis client (feed,
// WebSocket tickets, connection leases) is built with the same bounds as
// the counters': with redis-server frozen a ticket call fails within the
// timeout instead of blocking the /v1/ws handshake for seconds, and the
// feed's blocking subscription still outlives idle periods longer than the
// read timeout.
func TestLiveRedisClientIsBounded(t *testing.T) {
	srv := redistest.StartServer(t)
	t.Setenv("EO_REDIS_URL", srv.URL)
	t.Setenv("EO_REDIS_TIMEOUT", "200ms")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := loadConfig(os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	lo, closeLive, err := liveOptions(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive()
	events, err := lo.Feed.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // idle for 5 read timeouts
	if err := lo.Feed.Publish(ctx, live.Event{Kind: live.KindScore, MatchID: "m1", Status: "live"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.MatchID != "m1" {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the feed lost its subscription after an idle second")
	}

	srv.Freeze()
	defer srv.Resume()
	start := time.Now()
	_, _, err = lo.Tickets.Take(ctx, "no-such-ticket")
	if err == nil {
		t.Fatal("Take with redis frozen succeeded")
	}
	// 200 ms per attempt, 2 attempts and a short backoff; the go-redis
	// defaults took 6 s.
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Take with redis frozen took %s", d)
	}
}

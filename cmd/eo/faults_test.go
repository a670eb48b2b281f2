package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
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
)

// TestMain lets a test run this binary as the eo command in a child process
// (EO_TEST_EXEC_MAIN=1), so fault tests can kill, freeze or starve a real
// edge process without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("EO_TEST_EXEC_MAIN") == "1" {
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
		if world.err = run(ctx, []string{"generate", "--store", world.store, "--matches", "120", "--now", "2026-06-01T12:00:00Z"}); world.err != nil {
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
	out    *syncBuffer
	exited chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startEdge runs `eo serve` on store in a child process whose open-file
// limit is nofile (0: inherited), with a fresh work folder holding a
// standard key, and waits for /health. env adds variables.
func startEdge(t *testing.T, store string, nofile int, env ...string) *edgeProc {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	keys, err := access.Open(filepath.Join(work, "access.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	acct, _ := keys.CreateAccount("fault test", 0)
	key, _, err := keys.CreateKey(acct.ID, access.PlanStandard)
	if err != nil {
		t.Fatal(err)
	}
	keys.Close()
	return startEdgeIn(t, store, work, key, nofile, env...)
}

func startEdgeIn(t *testing.T, store, work, key string, nofile int, env ...string) *edgeProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := `exec "$0" "$@"`
	if nofile > 0 {
		script = fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, nofile)
	}
	cmd := exec.Command("sh", "-c", script, self, "serve", "--store", store, "--work", work, "--addr", addr)
	plans := filepath.Join(work, "plans.json")
	os.WriteFile(plans, []byte(`{"standard": {"burst": 1000000, "rate": 1000000, "monthly_quota": 1000000000}}`), 0o644)
	cmd.Env = append(os.Environ(), "EO_TEST_EXEC_MAIN=1", "EO_PLANS="+plans, "EO_USAGE_EXPORT_INTERVAL=1h")
	cmd.Env = append(cmd.Env, env...)
	p := &edgeProc{cmd: cmd, addr: addr, key: key, work: work, out: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if p.alive() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				<-p.exited
			}
		}
		if t.Failed() {
			t.Logf("eo serve output:\n%s", p.out)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if code, _ := p.get("/health", ""); code == 200 {
			return p
		}
		if !p.alive() {
			t.Fatalf("eo serve exited at start:\n%s", p.out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("eo serve never answered /health:\n%s", p.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
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

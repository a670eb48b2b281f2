// Package redistest starts a real redis-server for tests, on a free loopback
// port, and stops it when the test ends. Without the binary it fails the test
// under CI (where .ci/run installs it) and skips it elsewhere.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eodata/eo/internal/testkit/proctest"
)

// Server is a running redis-server that a fault test can freeze (SIGSTOP),
// resume (SIGCONT), kill (SIGKILL) and restart on the same port.
type Server struct {
	URL  string
	Addr string
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
}

// Start runs a fresh redis-server and returns its redis:// URL.
func Start(t testing.TB) string {
	t.Helper()
	return StartServer(t).URL
}

// StartServer runs a fresh redis-server and returns it; it is killed when
// the test ends (resumed first if frozen).
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server not found: .ci/run installs it (apt-get install redis-server)")
		}
		t.Skip("redis-server not on PATH (apt-get install redis-server)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &Server{t: t, bin: bin, dir: t.TempDir(), port: port,
		Addr: fmt.Sprintf("127.0.0.1:%d", port), URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port)}
	s.start()
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *Server) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "--port", fmt.Sprint(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.Ping(context.Background()).Err(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatal("redis-server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Pid is the server process's id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Freeze stops the process (SIGSTOP): connections are accepted by the
// kernel but nothing is answered, as with a hung server. It returns once
// every thread has stopped.
func (s *Server) Freeze() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP)
	if err := proctest.WaitStopped(s.Pid(), 10*time.Second); err != nil {
		s.t.Fatal(err)
	}
}

// Resume continues a frozen process (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// Kill stops the process with SIGKILL; its data (never persisted) is gone.
func (s *Server) Kill() { s.stop() }

// Restart starts an empty server on the same port after Kill.
func (s *Server) Restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	if s.cmd == nil || s.cmd.Process == nil {
		s.t.Fatal("redistest: the server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}

// Client runs a fresh redis-server (as Start) and returns a client to it,
// closed when the test ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(Start(t))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// Pairs makes each backend's pair of instances for a suite that runs
// against the in-memory and the Redis implementation: both the one memory
// value (one process), or two values over one Redis (two instances
// sharing it).
func Pairs[T any](memory func() T, overRedis func(*redis.Client) T) map[string]func(*testing.T) (T, T) {
	return map[string]func(*testing.T) (T, T){
		"memory": func(*testing.T) (T, T) { v := memory(); return v, v },
		"redis": func(t *testing.T) (T, T) {
			c := Client(t)
			return overRedis(c), overRedis(c)
		},
	}
}

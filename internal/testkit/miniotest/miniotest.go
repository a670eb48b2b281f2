// Package miniotest runs real MinIO servers for tests, on free loopback
// ports, with the controls fault tests need: kill -9, freeze (SIGSTOP),
// thaw and relaunch on the same port and data. Without the binary it fails
// the test under CI (where .ci/run installs it) and skips it elsewhere.
package miniotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/eodata/eo/internal/testkit/proctest"
)

// Credentials of every server started here.
const (
	AccessKey = "eotestadmin"
	SecretKey = "eotestadmin-secret"
)

// Hint says how to get the binary.
const Hint = "go install github.com/minio/minio@latest or set EO_TEST_MINIO_ENDPOINT"

// Server is a MinIO process.
type Server struct {
	Endpoint string // host:port
	bin      string
	dataDir  string
	console  string
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan error
	log      *proctest.Buffer
}

// Find returns the minio binary on PATH, in a GOPATH/bin or in $HOME/go/bin
// ("" when there is none).
func Find() string {
	if p, err := exec.LookPath("minio"); err == nil {
		return p
	}
	var dirs []string
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.SplitList(gp)...)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "bin", "minio")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Start launches a fresh server with its data in a test temp folder,
// stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Find()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but no minio binary is available: " + Hint + " (.ci/run installs it)")
		}
		t.Skip("minio binary not found: " + Hint)
	}
	s, err := Launch(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Launch starts bin on free ports with its data under dir and waits until it
// answers (up to 30 s).
func Launch(bin, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Endpoint: fmt.Sprintf("127.0.0.1:%d", port), console: fmt.Sprintf("127.0.0.1:%d", cport),
		bin: bin, dataDir: filepath.Join(dir, "data")}
	return s, s.launch()
}

func (s *Server) launch() error {
	cmd := exec.Command(s.bin, "server", s.dataDir, "--address", s.Endpoint, "--console-address", s.console, "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+AccessKey, "MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_UPDATE=off", "MINIO_BROWSER=off")
	// Dies with the test binary, even one killed by a test timeout (no
	// cleanup runs then).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s.log = &proctest.Buffer{}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if err := Wait(s.Endpoint, exited); err != nil {
		s.Kill()
		return fmt.Errorf("%w\nminio output:\n%s", err, s.log)
	}
	return nil
}

// Wait polls ListBuckets until the server at ep answers (up to 30 s) or
// exited receives.
func Wait(ep string, exited <-chan error) error {
	client, err := minio.New(ep, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, "")})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := client.ListBuckets(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("minio at %s not ready after 30s: %w", ep, err)
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("minio exited early: %v", werr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL and waits for the process to go.
func (s *Server) Kill() {
	s.signal(syscall.SIGCONT) // a frozen process dies on SIGKILL too; thaw so Wait returns at once
	s.signal(syscall.SIGKILL)
	s.reap(10 * time.Second)
}

// Freeze stops the process (SIGSTOP): it keeps its port, accepts TCP
// connections into the backlog and never answers. It returns once every
// thread has stopped (a request in flight on another core may still be
// answered until then).
func (s *Server) Freeze() {
	s.signal(syscall.SIGSTOP)
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		if err := proctest.WaitStopped(cmd.Process.Pid, 10*time.Second); err != nil {
			panic(err)
		}
	}
}

// Thaw resumes a frozen process (SIGCONT).
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

// Relaunch starts the server again on the same port and data (after Kill).
func (s *Server) Relaunch() error { return s.launch() }

// Stop ends the process (SIGTERM, then SIGKILL after 5 s).
func (s *Server) Stop() {
	s.signal(syscall.SIGCONT)
	s.signal(syscall.SIGTERM)
	if !s.reap(5 * time.Second) {
		s.Kill()
	}
}

func (s *Server) reap(wait time.Duration) bool {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return true
	}
	select {
	case <-exited: //nolint:errcheck // stopped on purpose: how it exited says nothing
		s.mu.Lock()
		if s.cmd == cmd {
			s.cmd = nil
		}
		s.mu.Unlock()
		return true
	case <-time.After(wait):
		return false
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Within runs fn and fails the test when it has not returned after limit: a
// fault test asserts that a call to a frozen or killed server ends (with an
// error) instead of hanging.
func Within(t testing.TB, limit time.Duration, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("%s still blocked after %s: a hung store stalls the caller", what, limit)
		return nil
	}
}

// shared is the MinIO server every S3 test of one test binary uses: one
// started on first use (and stopped by StopShared, from TestMain) or the
// one EO_TEST_MINIO_ENDPOINT names.
var shared struct {
	once     sync.Once
	endpoint string
	access   string
	secret   string
	err      error  // startup failure
	missing  string // why no server is available (binary not found)
	server   *Server
	dir      string
}

func startShared() {
	if ep := os.Getenv("EO_TEST_MINIO_ENDPOINT"); ep != "" {
		shared.endpoint, shared.access, shared.secret = ep, os.Getenv("EO_S3_ACCESS_KEY"), os.Getenv("EO_S3_SECRET_KEY")
		shared.err = Wait(ep, nil)
		return
	}
	bin := Find()
	if bin == "" {
		shared.missing = "minio binary not found on PATH or in GOPATH/bin; " + Hint
		return
	}
	dir, err := os.MkdirTemp("", "eo-minio-")
	if err != nil {
		shared.err = err
		return
	}
	shared.dir = dir
	srv, err := Launch(bin, dir)
	if err != nil {
		shared.err = err
		return
	}
	shared.server = srv
	shared.endpoint, shared.access, shared.secret = srv.Endpoint, AccessKey, SecretKey
}

// Shared returns the endpoint and credentials of the test binary's shared
// server. Without a minio binary the test is skipped, or fails when CI is
// set.
func Shared(t testing.TB) (endpoint, accessKey, secretKey string) {
	t.Helper()
	shared.once.Do(startShared)
	if shared.missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but no MinIO is available: " + shared.missing + " (.ci/run installs it)")
		}
		t.Skip(shared.missing + " (.ci/run installs it)")
	}
	if shared.err != nil {
		t.Fatalf("minio: %v", shared.err)
	}
	return shared.endpoint, shared.access, shared.secret
}

// StopShared stops the shared server, if this process started one; call it
// from TestMain after the tests ran.
func StopShared() {
	if shared.server != nil {
		shared.server.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}

var nonBucketChars = regexp.MustCompile(`[^a-z0-9-]+`)

// Bucket derives a fresh, valid bucket name from the test's name.
func Bucket(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := nonBucketChars.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim("eo-"+strings.Trim(name, "-"), "-") + "-" + hex.EncodeToString(b[:])
}

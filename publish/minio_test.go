package publish

import (
	"bytes"
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
)

const (
	minioUser     = "eotestadmin"
	minioPassword = "eotestadmin-secret"
	minioHint     = "go install github.com/minio/minio@latest or set EO_TEST_MINIO_ENDPOINT"
)

// testMinio is a MinIO server shared by every S3 test in the package: either
// one started here (and stopped by TestMain) or the one named by
// EO_TEST_MINIO_ENDPOINT.
var testMinio struct {
	once      sync.Once
	endpoint  string
	accessKey string
	secretKey string
	err       error  // startup failure
	missing   string // why no server is available (binary not found)
	cmd       *exec.Cmd
	exited    chan error // receives cmd.Wait's result once
	dir       string
	log       *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopMinio()
	os.Exit(code)
}

func stopMinio() {
	if c := testMinio.cmd; c != nil && c.Process != nil {
		c.Process.Signal(syscall.SIGTERM)
		select {
		case <-testMinio.exited:
		case <-time.After(5 * time.Second):
			c.Process.Kill()
			<-testMinio.exited
		}
	}
	if testMinio.dir != "" {
		os.RemoveAll(testMinio.dir)
	}
}

// findMinio looks for the minio binary on PATH, then in every GOPATH/bin,
// then in $HOME/go/bin.
func findMinio() string {
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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func setupMinio() {
	if ep := os.Getenv("EO_TEST_MINIO_ENDPOINT"); ep != "" {
		testMinio.endpoint = ep
		testMinio.accessKey = os.Getenv("EO_S3_ACCESS_KEY")
		testMinio.secretKey = os.Getenv("EO_S3_SECRET_KEY")
		testMinio.err = waitMinio(ep, nil)
		return
	}
	bin := findMinio()
	if bin == "" {
		testMinio.missing = "minio binary not found on PATH or in GOPATH/bin; " + minioHint
		return
	}
	dir, err := os.MkdirTemp("", "eo-publish-minio-")
	if err != nil {
		testMinio.err = err
		return
	}
	testMinio.dir = dir
	port, err := freePort()
	if err != nil {
		testMinio.err = err
		return
	}
	cport, err := freePort()
	if err != nil {
		testMinio.err = err
		return
	}
	ep := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "server", filepath.Join(dir, "data"),
		"--address", ep, "--console-address", fmt.Sprintf("127.0.0.1:%d", cport), "--quiet")
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+minioUser,
		"MINIO_ROOT_PASSWORD="+minioPassword,
		"MINIO_UPDATE=off",
		"MINIO_BROWSER=off",
	)
	testMinio.log = &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = testMinio.log, testMinio.log
	if err := cmd.Start(); err != nil {
		testMinio.err = fmt.Errorf("start %s: %w", bin, err)
		return
	}
	testMinio.cmd = cmd
	exited := make(chan error, 1)
	testMinio.exited = exited
	go func() { exited <- cmd.Wait() }()
	testMinio.endpoint, testMinio.accessKey, testMinio.secretKey = ep, minioUser, minioPassword
	if err := waitMinio(ep, exited); err != nil {
		testMinio.err = fmt.Errorf("%w\nminio output:\n%s", err, testMinio.log)
	}
}

// waitMinio polls ListBuckets until the server answers (up to 30 s).
func waitMinio(ep string, exited <-chan error) error {
	client, err := minio.New(ep, &minio.Options{
		Creds: credentials.NewStaticV4(testMinio.accessKey, testMinio.secretKey, ""),
	})
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
			testMinio.cmd = nil // already reaped; nothing for stopMinio to stop
			return fmt.Errorf("minio exited early: %v", werr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// requireMinio returns the shared MinIO endpoint. Without a minio binary the
// test is skipped, or fails when CI is set.
func requireMinio(t *testing.T) (endpoint, accessKey, secretKey string) {
	t.Helper()
	testMinio.once.Do(setupMinio)
	if testMinio.missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but no MinIO is available: " + testMinio.missing + " (.ci/run installs it)")
		}
		t.Skip(testMinio.missing + " (.ci/run installs it)")
	}
	if testMinio.err != nil {
		t.Fatalf("minio: %v", testMinio.err)
	}
	return testMinio.endpoint, testMinio.accessKey, testMinio.secretKey
}

var nonBucketChars = regexp.MustCompile(`[^a-z0-9-]+`)

// uniqueBucket derives a fresh, valid bucket name from the test name.
func uniqueBucket(t *testing.T) string {
	var b [4]byte
	rand.Read(b[:])
	name := nonBucketChars.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim("eo-"+strings.Trim(name, "-"), "-") + "-" + hex.EncodeToString(b[:])
}

// newTestS3 returns an S3 store on the shared MinIO in a fresh bucket.
func newTestS3(t *testing.T, prefix string) *S3 {
	t.Helper()
	ep, ak, sk := requireMinio(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := NewS3(ctx, S3Options{
		Endpoint: ep, Bucket: uniqueBucket(t), Prefix: prefix,
		AccessKey: ak, SecretKey: sk, CreateBucket: true,
	})
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	return s
}

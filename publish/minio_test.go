package publish

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eodata/eo/publish/miniotest"
)

const minioHint = miniotest.Hint

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
	server    *miniotest.Server
	dir       string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testMinio.server != nil {
		testMinio.server.Stop()
	}
	if testMinio.dir != "" {
		os.RemoveAll(testMinio.dir)
	}
	os.Exit(code)
}

func setupMinio() {
	if ep := os.Getenv("EO_TEST_MINIO_ENDPOINT"); ep != "" {
		testMinio.endpoint = ep
		testMinio.accessKey = os.Getenv("EO_S3_ACCESS_KEY")
		testMinio.secretKey = os.Getenv("EO_S3_SECRET_KEY")
		testMinio.err = miniotest.Wait(ep, nil)
		return
	}
	bin := miniotest.Find()
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
	srv, err := miniotest.Launch(bin, dir)
	if err != nil {
		testMinio.err = err
		return
	}
	testMinio.server = srv
	testMinio.endpoint, testMinio.accessKey, testMinio.secretKey = srv.Endpoint, miniotest.AccessKey, miniotest.SecretKey
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

package publish

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/miniotest"
	"github.com/eodata/eo/store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	miniotest.StopShared()
	os.Exit(code)
}

// newTestS3 returns an S3 store on the shared MinIO in a fresh bucket.
func newTestS3(t *testing.T, prefix string) *store.S3 {
	t.Helper()
	ep, ak, sk := miniotest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := store.NewS3(ctx, store.S3Options{Endpoint: ep, Bucket: miniotest.Bucket(t), Prefix: prefix, AccessKey: ak,
		SecretKey: sk, CreateBucket: true})
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	return s
}

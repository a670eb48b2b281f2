package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/miniotest"
	"github.com/eodata/eo/store"
)

// TestS3FrozenOrKilledServerFailsFast: with the MinIO process frozen
// (SIGSTOP: connections are accepted, nothing answers) or killed, every
// store call fails within its I/O timeout and attempts instead of blocking
// (an `eo pipeline run` used to block 7.5 minutes in publish), a publish
// leaves the pointer where it was, and calls work again once the server is
// back.
func TestS3FrozenOrKilledServerFailsFast(t *testing.T) {
	srv := miniotest.Start(t)
	ctx := context.Background()
	opts := store.S3Options{Endpoint: srv.Endpoint, Bucket: "faults", AccessKey: miniotest.AccessKey,
		SecretKey: miniotest.SecretKey, CreateBucket: true, IOTimeout: time.Second, MaxRetries: 2}
	s, err := store.NewS3(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	m1, err := Publish(ctx, s, newManifest(time.Now()), writeTables(t, src, "matches", "teams"))
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 8<<20)
	calls := map[string]func() error{
		"Get":  func() error { _, err := store.GetBytes(ctx, s, "snapshots/latest.json"); return err },
		"Stat": func() error { _, err := s.Stat(ctx, "snapshots/latest.json"); return err },
		"List": func() error { _, err := s.List(ctx, "snapshots/"); return err },
		"Put":  func() error { return store.PutBytes(ctx, s, "big.bin", big) },
		"Publish": func() error {
			src2 := t.TempDir()
			_, err := Publish(ctx, s, newManifest(time.Now().Add(time.Minute)), writeTables(t, src2, "matches", "teams"))
			return err
		},
	}
	for _, fault := range []string{"frozen", "killed"} {
		if fault == "frozen" {
			srv.Freeze()
		} else {
			srv.Kill()
		}
		for name, fn := range calls {
			// 2 attempts x 1 s I/O timeout plus backoff; a minute is a hang.
			if err := miniotest.Within(t, time.Minute, fmt.Sprintf("%s with the server %s", name, fault), fn); err == nil {
				t.Fatalf("%s with the server %s succeeded", name, fault)
			}
		}
		if fault == "frozen" {
			srv.Thaw()
		} else if err := srv.Relaunch(); err != nil {
			t.Fatal(err)
		}
		var p Pointer
		err := miniotest.Within(t, time.Minute, "ReadPointer after the fault", func() (err error) {
			for i := 0; i < 30; i++ { // the relaunched server may take a moment
				if p, err = ReadPointer(ctx, s); err == nil {
					return nil
				}
				time.Sleep(200 * time.Millisecond)
			}
			return err
		})
		if err != nil || p.SnapshotID != m1.SnapshotID {
			t.Fatalf("%s: pointer after the fault = %+v, %v; want %s", fault, p, err, m1.SnapshotID)
		}
	}
	// A lazily opened store does not contact the server: it opens with the
	// server down and its calls fail.
	srv.Kill()
	lazy := opts
	lazy.SkipBucketCheck = true
	ls, err := store.NewS3(ctx, lazy)
	if err != nil {
		t.Fatalf("lazy open with the server down: %v", err)
	}
	if _, err := ReadPointer(ctx, ls); err == nil || errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("ReadPointer with the server down: %v", err)
	}
}

package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/miniotest"
)

// TestUpdateIsACompareAndSwap: writers that each hold their own client of
// one store (an S3 client per writer, a Local per writer on one folder:
// as separate processes or hosts would) increment a counter through
// Update. Every Update that returns nil counts once, and none is lost: a
// plain read-then-Put loses most of them under the same load.
func TestUpdateIsACompareAndSwap(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		m := NewMemory()
		testUpdate(t, func() Store { return m })
	})
	t.Run("local", func(t *testing.T) {
		dir := newTestLocal(t).Dir()
		testUpdate(t, func() Store {
			s, err := NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
		assertNoTempFiles(t, dir)
	})
	t.Run("s3", func(t *testing.T) {
		first := newTestS3(t, "cas/")
		ep, ak, sk := miniotest.Shared(t)
		testUpdate(t, func() Store {
			s, err := NewS3(context.Background(), S3Options{Endpoint: ep, Bucket: first.bucket,
				Prefix: "cas/", AccessKey: ak, SecretKey: sk})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
}

func testUpdate(t *testing.T, client func() Store) {
	ctx := context.Background()
	const writers, each = 4, 8
	s := client()

	// A missing object is nil to fn, an empty one is not.
	if err := s.Update(ctx, "obj/empty", func(cur []byte) ([]byte, error) {
		if cur != nil {
			t.Errorf("missing object: fn got %q, want nil", cur)
		}
		return []byte{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, "obj/empty", func(cur []byte) ([]byte, error) {
		if cur == nil || len(cur) != 0 {
			t.Errorf("empty object: fn got %v, want an empty slice", cur)
		}
		return []byte("x"), nil
	}); err != nil {
		t.Fatal(err)
	}
	// An error from fn is returned as is and changes nothing.
	errStop := errors.New("stop")
	if err := s.Update(ctx, "obj/empty", func([]byte) ([]byte, error) { return []byte("y"), errStop }); !errors.Is(err, errStop) {
		t.Fatalf("fn's error: Update returned %v", err)
	}
	if got := mustGet(t, s, "obj/empty"); string(got) != "x" {
		t.Fatalf("after a refused update the object holds %q, want x", got)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range writers {
		c := client()
		wg.Go(func() {
			for range each {
				err := c.Update(ctx, "obj/counter", func(cur []byte) ([]byte, error) {
					n := 0
					if cur != nil {
						var err error
						if n, err = strconv.Atoi(string(cur)); err != nil {
							return nil, err
						}
					}
					time.Sleep(2 * time.Millisecond) // others read the same value meanwhile
					return []byte(strconv.Itoa(n + 1)), nil
				})
				switch {
				case err == nil:
					mu.Lock()
					done++
					mu.Unlock()
				case !errors.Is(err, ErrConflict):
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := mustGet(t, s, "obj/counter")
	if want := strconv.Itoa(done); !bytes.Equal(got, []byte(want)) {
		t.Fatalf("counter = %s after %d successful updates: updates were lost", got, done)
	}
	if done < writers*each/2 {
		t.Errorf("only %d of %d updates succeeded", done, writers*each)
	}
}

// A publisher frozen (SIGSTOP) or hung while it holds the local store's
// update lock makes another Update fail after updateLockWait with an error
// that says so, instead of waiting for ever; once the lock is free,
// Updates go on.
func TestLocalUpdateWaitsBoundedForAFrozenHolder(t *testing.T) {
	defer func(w time.Duration) { UpdateLockWait = w }(UpdateLockWait)
	UpdateLockWait = 200 * time.Millisecond
	s := newTestLocal(t)
	held, err := os.OpenFile(filepath.Join(s.Dir(), UpdateLock), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil { // another open file: as another process
		t.Fatal(err)
	}
	err = s.Update(context.Background(), "obj", func([]byte) ([]byte, error) { return []byte("x"), nil })
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "stopped or hung") {
		t.Fatalf("Update with the lock held: %v", err)
	}
	held.Close()
	if err := s.Update(context.Background(), "obj", func([]byte) ([]byte, error) { return []byte("x"), nil }); err != nil {
		t.Fatalf("Update once the lock is free: %v", err)
	}
}

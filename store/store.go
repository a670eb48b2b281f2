// Package store is the object store every part of the service reads and
// writes through: raw batches, snapshots, saved registries and usage
// exports all live in it. Store has three implementations: a local
// folder, S3-compatible storage through minio-go, and memory for tests;
// Open builds one from a location and the options it is passed (it reads
// no environment). Puts are atomic and Update is a compare-and-swap, which
// is what snapshot publishing (package publish) is built on.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// ErrNotFound reports that an object does not exist in the store.
var ErrNotFound = errors.New("store: object not found")

// ErrChecksum reports that downloaded or stored data does not match the size
// or SHA-256 recorded for it.
var ErrChecksum = errors.New("store: checksum mismatch")

// ErrConflict reports that an Update kept losing to other writers of the
// same object (MaxUpdateAttempts times).
var ErrConflict = errors.New("store: object changed by another writer")

// MaxUpdateAttempts is how many times an Update reads, calls its function
// and tries the conditional write before it gives up with ErrConflict.
const MaxUpdateAttempts = 10

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string    // key relative to the store root, '/'-separated
	Size    int64     // size in bytes
	ModTime time.Time // last modification time as reported by the backend
}

// Store is a flat key space of immutable-ish objects. Keys use '/'
// separators, no leading '/'.
type Store interface {
	// Put stores the contents of r under key. It is atomic: readers see the
	// old object or the whole new one. size is the exact length of r, or -1
	// when unknown.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens the object; the error wraps ErrNotFound when it is missing.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat describes the object; the error wraps ErrNotFound when it is missing.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List returns every object whose key starts with prefix (recursively),
	// sorted by Key ascending.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Delete removes the object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// Update replaces the object with what fn makes of its current bytes
	// (nil when it does not exist) if no other Update replaced it in
	// between: a compare-and-swap. When another writer won, fn runs again
	// on the newer bytes (up to MaxUpdateAttempts times, then the error
	// wraps ErrConflict). An error from fn ends it, returned as is, and
	// the object stays as it was. It excludes other Updates, in this
	// process or any other (S3: a conditional PUT, If-Match on the ETag
	// read; Local: an flock on the store's folder), not plain Puts.
	Update(ctx context.Context, key string, fn func(cur []byte) ([]byte, error)) error
	// String describes the store for humans; it never contains credentials.
	String() string
}

// validKey reports whether key is usable in every backend: non-empty, no
// leading or trailing '/', no empty, "." or ".." segments, no backslashes or
// NUL bytes, and no segment that looks like a Local temp file.
func ValidKey(key string) error {
	if key == "" {
		return errors.New("empty key")
	}
	if strings.ContainsAny(key, "\\\x00") {
		return fmt.Errorf("key %q contains a backslash or NUL", key)
	}
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("key %q has an empty segment or a leading/trailing '/'", key)
		case seg == "." || seg == "..":
			return fmt.Errorf("key %q has a %q segment", key, seg)
		case strings.HasPrefix(seg, TempPrefix):
			return fmt.Errorf("key %q uses the reserved %q prefix", key, TempPrefix)
		}
	}
	return nil
}

// PutFile uploads the local file at path under key.
func PutFile(ctx context.Context, s Store, key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	if err := s.Put(ctx, key, f, fi.Size()); err != nil {
		return fmt.Errorf("store: put %s from %s: %w", key, path, err)
	}
	return nil
}

// PutBytes stores b under key.
func PutBytes(ctx context.Context, s Store, key string, b []byte) error {
	if err := s.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	return nil
}

// GetBytes reads the whole object stored under key. The error wraps
// ErrNotFound when it is missing.
func GetBytes(ctx context.Context, s Store, key string) ([]byte, error) {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("store: get %s: %w", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", key, err)
	}
	return b, nil
}

// ctxReader makes a long copy stop once its context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// readSized reads all of r, checking it against size when size >= 0.
func readSized(ctx context.Context, r io.Reader, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size))
	}
	n, err := io.Copy(&buf, ctxReader{ctx, r})
	if err != nil {
		return nil, err
	}
	if size >= 0 && n != size {
		return nil, fmt.Errorf("read %d bytes, want %d", n, size)
	}
	return buf.Bytes(), nil
}

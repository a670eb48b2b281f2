package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// tempPrefix starts the name of every in-progress file Local writes. List
// ignores such files and validKey refuses keys that would collide with them.
const TempPrefix = ".tmp-"

// updateLock is the file in the store's folder whose flock an Update holds
// (named as a temp file: List passes over it and no key can name it).
const UpdateLock = TempPrefix + "update.lock"

// updateLockWait bounds how long an Update waits for another's lock (an
// update holds it for one small read and write).
var UpdateLockWait = time.Minute

// Local is a Store backed by a folder. Each key maps to the file at
// dir/<key>; Put writes a temp file in the destination folder, syncs it,
// renames it into place and syncs the folder, so readers never see a
// partial object.
type Local struct {
	dir string
}

// NewLocal returns a store rooted at dir, creating the folder if needed.
func NewLocal(dir string) (*Local, error) {
	if dir == "" {
		return nil, errors.New("store: local store: empty folder path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: local store %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("store: local store: create folder: %w", err)
	}
	return &Local{dir: abs}, nil
}

// Dir returns the absolute folder the store lives in.
func (l *Local) Dir() string { return l.dir }

func (l *Local) path(key string) string {
	return filepath.Join(l.dir, filepath.FromSlash(key))
}

// Put implements Store.
func (l *Local) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("store: local put: %w", err)
	}
	if err := WriteFileAtomic(ctx, l.path(key), r, size); err != nil {
		return fmt.Errorf("store: local put %s: %w", key, err)
	}
	return nil
}

// Update implements Store. Updates exclude each other with an flock on one
// file in the store's folder, held from the read to the rename: processes
// on this host sharing the folder take turns.
func (l *Local) Update(ctx context.Context, key string, fn func(cur []byte) ([]byte, error)) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("store: local update: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(l.dir, UpdateLock), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("store: local update %s: %w", key, err)
	}
	defer f.Close() // and the flock with it
	lctx, cancel := context.WithTimeout(ctx, UpdateLockWait)
	defer cancel()
	if err := flockWait(lctx, f); err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			// A holder frozen (SIGSTOP) or hung mid-update: say who to look for.
			return fmt.Errorf("store: local update %s: another process has held %s for %s (a publisher stopped or hung mid-update?): %w",
				key, f.Name(), UpdateLockWait, ErrConflict)
		}
		return fmt.Errorf("store: local update %s: lock: %w", key, err)
	}
	cur, err := os.ReadFile(l.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		cur, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("store: local update %s: %w", key, err)
	}
	next, err := fn(cur)
	if err != nil {
		return err
	}
	return l.Put(ctx, key, bytes.NewReader(next), int64(len(next)))
}

// flockWait takes f's exclusive flock, waiting for it until ctx ends.
func flockWait(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || (!errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR)) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// SweepTemp removes the temp files (tempPrefix) under dir that were last
// written before cutoff: the leftovers of writers killed between creating
// and renaming them (an upload or a fetch cut by kill -9 or an OOM kill),
// which List never shows and nothing else removes. A temp file being
// written has a fresh modification time; the update lock is kept. It
// returns how many it removed.
func SweepTemp(dir string, cutoff time.Time) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile (a pruned folder)
			}
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), TempPrefix) || d.Name() == UpdateLock {
			return nil
		}
		fi, err := d.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			return nil
		}
		if err := os.Remove(p); err == nil {
			n++
		}
		return nil
	})
	return n, err
}

// writeFileAtomic writes r to dst via a temp file in the same folder: write,
// fsync, close, rename, fsync folder. On any error the temp file is removed
// and dst is left as it was.
func WriteFileAtomic(ctx context.Context, dst string, r io.Reader, size int64) (err error) {
	dir := filepath.Dir(dst)
	var f *os.File
	// A concurrent Delete may prune a freshly created empty folder; retry.
	for attempt := 0; ; attempt++ {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create folder: %w", err)
		}
		f, err = os.CreateTemp(dir, TempPrefix+filepath.Base(dst)+"-*")
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt >= 3 {
			return fmt.Errorf("create temp file: %w", err)
		}
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, ctxReader{ctx, r})
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("wrote %d bytes, want %d", n, size)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync folder: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return err
	}
	return nil
}

// Get implements Store.
func (l *Local) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidKey(key); err != nil {
		return nil, fmt.Errorf("store: local get: %w", err)
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) || isNotDir(err) {
			return nil, fmt.Errorf("store: local get %s: %w", key, ErrNotFound)
		}
		return nil, fmt.Errorf("store: local get %s: %w", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: local get %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("store: local get %s: %w", key, ErrNotFound)
	}
	return f, nil
}

// Stat implements Store.
func (l *Local) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidKey(key); err != nil {
		return ObjectInfo{}, fmt.Errorf("store: local stat: %w", err)
	}
	fi, err := os.Stat(l.path(key))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
			return ObjectInfo{}, fmt.Errorf("store: local stat %s: %w", key, ErrNotFound)
		}
		return ObjectInfo{}, fmt.Errorf("store: local stat %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		return ObjectInfo{}, fmt.Errorf("store: local stat %s: %w", key, ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// isNotDir reports ENOTDIR-style errors (a path component is a file).
func isNotDir(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

// List implements Store. Temp files of in-progress or abandoned Puts are
// never listed.
func (l *Local) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	// Walk only the deepest folder that can hold matching keys.
	start := l.dir
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = filepath.Join(l.dir, filepath.FromSlash(path.Clean(prefix[:i])))
		if !strings.HasPrefix(start, l.dir) {
			return nil, fmt.Errorf("store: local list %q: prefix escapes the store", prefix)
		}
	}
	var out []ObjectInfo
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), TempPrefix) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(l.dir, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		out = append(out, ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: local list %q: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Delete implements Store. Folders left empty are removed too.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("store: local delete: %w", err)
	}
	p := l.path(key)
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		return nil // a folder is not an object
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
		return fmt.Errorf("store: local delete %s: %w", key, err)
	}
	// Prune empty parents up to (not including) the root; os.Remove fails
	// harmlessly on a non-empty folder.
	for dir := filepath.Dir(p); dir != l.dir && strings.HasPrefix(dir, l.dir); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// String implements Store.
func (l *Local) String() string { return "local folder " + l.dir }

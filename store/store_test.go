package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/miniotest"
)

// failingReader returns data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func mustGet(t *testing.T, s Store, key string) []byte {
	t.Helper()
	b, err := GetBytes(context.Background(), s, key)
	if err != nil {
		t.Fatalf("GetBytes(%q): %v", key, err)
	}
	return b
}

func mustPut(t *testing.T, s Store, key string, b []byte) {
	t.Helper()
	if err := PutBytes(context.Background(), s, key, b); err != nil {
		t.Fatalf("PutBytes(%q): %v", key, err)
	}
}

func listKeys(t *testing.T, s Store, prefix string) []string {
	t.Helper()
	objs, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	keys := []string{}
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

// testStore checks the Store contract; every backend must pass it.
func testStore(t *testing.T, s Store) {
	ctx := context.Background()

	if s.String() == "" {
		t.Error("String() is empty")
	}

	// Missing objects.
	if _, err := s.Get(ctx, "nope/missing.txt"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get missing: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Stat(ctx, "nope/missing.txt"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat missing: err = %v, want ErrNotFound", err)
	}
	if _, err := GetBytes(ctx, s, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetBytes missing: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "nope/missing.txt"); err != nil {
		t.Errorf("Delete missing: %v", err)
	}
	if keys := listKeys(t, s, ""); len(keys) != 0 {
		t.Errorf("List on empty store = %v", keys)
	}

	// Put / Get / Stat. Insert in an order unrelated to key order.
	objs := map[string]string{
		"b/x":       "bx",
		"a/b/c.txt": "abc",
		"ab":        "ab!",
		"a.txt":     "a-dot",
		"a/b.txt":   "a-slash-b",
		"a/a":       "",
	}
	for _, k := range []string{"b/x", "a/b/c.txt", "ab", "a.txt", "a/b.txt", "a/a"} {
		mustPut(t, s, k, []byte(objs[k]))
	}
	before := time.Now().Add(-time.Hour)
	for k, v := range objs {
		if got := string(mustGet(t, s, k)); got != v {
			t.Errorf("Get(%q) = %q, want %q", k, got, v)
		}
		info, err := s.Stat(ctx, k)
		if err != nil {
			t.Fatalf("Stat(%q): %v", k, err)
		}
		if info.Key != k || info.Size != int64(len(v)) {
			t.Errorf("Stat(%q) = %+v, want size %d", k, info, len(v))
		}
		if info.ModTime.Before(before) {
			t.Errorf("Stat(%q).ModTime = %v, want recent", k, info.ModTime)
		}
	}

	// List: sorted by key, string-prefix semantics, recursive.
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"a.txt", "a/a", "a/b.txt", "a/b/c.txt", "ab", "b/x"}},
		{"a", []string{"a.txt", "a/a", "a/b.txt", "a/b/c.txt", "ab"}},
		{"a/", []string{"a/a", "a/b.txt", "a/b/c.txt"}},
		{"a/b", []string{"a/b.txt", "a/b/c.txt"}},
		{"a/b/", []string{"a/b/c.txt"}},
		{"b/", []string{"b/x"}},
		{"c/", []string{}},
		{"zzz", []string{}},
	} {
		if got := listKeys(t, s, tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
	all, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range all {
		if o.Size != int64(len(objs[o.Key])) {
			t.Errorf("List entry %+v: size want %d", o, len(objs[o.Key]))
		}
	}

	// Overwrite with shorter content; size -1 (unknown).
	if err := s.Put(ctx, "a/b.txt", strings.NewReader("new"), -1); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	if got := string(mustGet(t, s, "a/b.txt")); got != "new" {
		t.Errorf("after overwrite Get = %q, want %q", got, "new")
	}
	if info, err := s.Stat(ctx, "a/b.txt"); err != nil || info.Size != 3 {
		t.Errorf("after overwrite Stat = %+v, %v; want size 3", info, err)
	}

	// A failing reader leaves the old object untouched and adds nothing.
	boom := errors.New("boom")
	err = s.Put(ctx, "a/b.txt", &failingReader{data: []byte("partial data"), err: boom}, -1)
	if err == nil {
		t.Error("Put with failing reader: want error")
	}
	err = s.Put(ctx, "fresh/key", &failingReader{data: []byte("partial"), err: boom}, 100)
	if err == nil {
		t.Error("Put with failing reader (sized): want error")
	}
	if got := string(mustGet(t, s, "a/b.txt")); got != "new" {
		t.Errorf("after failed Put Get = %q, want old %q", got, "new")
	}
	if _, err := s.Stat(ctx, "fresh/key"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after failed Put of new key Stat err = %v, want ErrNotFound", err)
	}

	// Declared size longer than the data is an error, not a short object.
	if err := s.Put(ctx, "short", strings.NewReader("12345"), 10); err == nil {
		t.Error("Put with size 10 but 5 bytes: want error")
	}
	if _, err := s.Stat(ctx, "short"); !errors.Is(err, ErrNotFound) {
		t.Errorf("short Put left an object: Stat err = %v", err)
	}

	// Invalid keys are refused.
	for _, k := range []string{"", "/abs", "a//b", "../x", "a/./b", "trail/"} {
		if err := s.Put(ctx, k, strings.NewReader("x"), 1); err == nil {
			t.Errorf("Put(%q): want error", k)
		}
	}

	// Delete is idempotent and hides the object.
	for i := 0; i < 2; i++ {
		if err := s.Delete(ctx, "a/b/c.txt"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, err := s.Get(ctx, "a/b/c.txt"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: err = %v, want ErrNotFound", err)
	}
	if got, want := listKeys(t, s, "a/"), []string{"a/a", "a/b.txt"}; !slices.Equal(got, want) {
		t.Errorf("List after Delete = %q, want %q", got, want)
	}
	if got := string(mustGet(t, s, "a/b.txt")); got != "new" {
		t.Errorf("sibling after Delete = %q", got)
	}

	// Large object, streamed with unknown and known size.
	big := make([]byte, 5<<20+123)
	rand.Read(big)
	want := sha256.Sum256(big)
	for _, size := range []int64{int64(len(big)), -1} {
		if err := s.Put(ctx, "big/object.bin", bytes.NewReader(big), size); err != nil {
			t.Fatalf("Put big (size %d): %v", size, err)
		}
		rc, err := s.Get(ctx, "big/object.bin")
		if err != nil {
			t.Fatalf("Get big: %v", err)
		}
		h := sha256.New()
		n, err := io.Copy(h, rc)
		rc.Close()
		if err != nil {
			t.Fatalf("read big: %v", err)
		}
		if n != int64(len(big)) || !bytes.Equal(h.Sum(nil), want[:]) {
			t.Errorf("big object round trip (size %d): got %d bytes, content mismatch=%v", size, n, !bytes.Equal(h.Sum(nil), want[:]))
		}
		if info, err := s.Stat(ctx, "big/object.bin"); err != nil || info.Size != int64(len(big)) {
			t.Errorf("Stat big = %+v, %v", info, err)
		}
	}

	// PutFile.
	p := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(p, []byte("from a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PutFile(ctx, s, "files/f.bin", p); err != nil {
		t.Fatalf("PutFile: %v", err)
	}
	if got := string(mustGet(t, s, "files/f.bin")); got != "from a file" {
		t.Errorf("PutFile round trip = %q", got)
	}
	if err := PutFile(ctx, s, "files/g.bin", filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("PutFile of a missing file: want error")
	}

	// A cancelled context stops a Put.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Put(cctx, "cancelled", bytes.NewReader(big), int64(len(big))); err == nil {
		t.Error("Put with cancelled context: want error")
	}
	if _, err := s.Stat(ctx, "cancelled"); !errors.Is(err, ErrNotFound) {
		t.Errorf("cancelled Put left an object: Stat err = %v", err)
	}
}

func TestMemoryStore(t *testing.T) { testStore(t, NewMemory()) }

func TestLocalStore(t *testing.T) {
	dir := t.TempDir()
	s, err := NewLocal(filepath.Join(dir, "nested", "store"))
	if err != nil {
		t.Fatal(err)
	}
	testStore(t, s)
	assertNoTempFiles(t, s.Dir())
}

func TestS3Store(t *testing.T) {
	t.Run("bucket root", func(t *testing.T) { testStore(t, newTestS3(t, "")) })
	t.Run("prefix", func(t *testing.T) {
		s := newTestS3(t, "/team/eo/")
		ep, ak, sk := miniotest.Shared(t)
		testStore(t, s)
		// Every object lives under the prefix in the bucket.
		root, err := NewS3(context.Background(), S3Options{
			Endpoint: ep, Bucket: s.bucket, AccessKey: ak, SecretKey: sk,
		})
		if err != nil {
			t.Fatal(err)
		}
		keys := listKeys(t, root, "")
		if len(keys) == 0 {
			t.Fatal("bucket is empty")
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, "team/eo/") {
				t.Errorf("object %q outside prefix team/eo/", k)
			}
		}
	})
	t.Run("string hides secret", func(t *testing.T) {
		s := newTestS3(t, "p")
		_, ak, sk := miniotest.Shared(t)
		if str := s.String(); strings.Contains(str, sk) || strings.Contains(str, ak) {
			t.Errorf("String() = %q leaks credentials", str)
		}
	})
	t.Run("missing bucket", func(t *testing.T) {
		ep, ak, sk := miniotest.Shared(t)
		_, err := NewS3(context.Background(), S3Options{Endpoint: ep, Bucket: miniotest.Bucket(t), AccessKey: ak, SecretKey: sk})
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("NewS3 without CreateBucket on a missing bucket: err = %v", err)
		}
	})
}

// newTestLocal is a local store in a temporary folder.
func newTestLocal(t *testing.T) *Local {
	t.Helper()
	s, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// assertNoTempFiles fails the test for a temp file left in dir (Update's
// lock file, which stays, aside).
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(d.Name(), TempPrefix) && d.Name() != UpdateLock {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
}

func TestLocalInterruptedPut(t *testing.T) {
	ctx := context.Background()
	s := newTestLocal(t)
	data := bytes.Repeat([]byte("x"), 1<<20)
	err := s.Put(ctx, "deep/dir/obj.parquet", &failingReader{data: data, err: io.ErrUnexpectedEOF}, -1)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("interrupted Put: err = %v, want it to wrap the reader's error", err)
	}
	if _, err := s.Stat(ctx, "deep/dir/obj.parquet"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat after interrupted Put: err = %v, want ErrNotFound", err)
	}
	if keys := listKeys(t, s, ""); len(keys) != 0 {
		t.Errorf("List after interrupted Put = %q, want nothing", keys)
	}
	assertNoTempFiles(t, s.Dir())

	// A temp file abandoned by a killed process (no cleanup ran) stays
	// invisible to List and Get.
	mustPut(t, s, "deep/dir/real", []byte("ok"))
	stray := filepath.Join(s.Dir(), "deep", "dir", TempPrefix+"obj.parquet-123")
	if err := os.WriteFile(stray, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := listKeys(t, s, ""), []string{"deep/dir/real"}; !slices.Equal(got, want) {
		t.Errorf("List with stray temp file = %q, want %q", got, want)
	}
	if _, err := s.Get(ctx, "deep/dir/"+TempPrefix+"obj.parquet-123"); err == nil {
		t.Error("Get of a temp file name: want error")
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, loc := range []string{filepath.Join(dir, "plain"), "file://" + filepath.Join(dir, "url")} {
		s, err := Open(ctx, loc, S3Options{})
		if err != nil {
			t.Fatalf("Open(%q): %v", loc, err)
		}
		if _, ok := s.(*Local); !ok {
			t.Fatalf("Open(%q) = %T, want *Local", loc, s)
		}
		mustPut(t, s, "k", []byte("v"))
	}
	for _, p := range []string{"plain/k", "url/k"} {
		if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != "v" {
			t.Errorf("file %s = %q, %v", p, b, err)
		}
	}
	for _, loc := range []string{"", "gs://bucket/x", "s3:///prefix"} {
		if s, err := Open(ctx, loc, S3Options{}); err == nil {
			t.Errorf("Open(%q) = %v, want error", loc, s)
		}
	}
	if _, err := Open(ctx, "s3://bucket/p", S3Options{}); err == nil || !strings.Contains(err.Error(), "no S3 endpoint") {
		t.Errorf("Open(s3://) without an endpoint: err = %v", err)
	}
}

func TestOpenS3(t *testing.T) {
	ctx := context.Background()
	ep, ak, sk := miniotest.Shared(t)
	bucket := miniotest.Bucket(t)
	if _, err := NewS3(ctx, S3Options{Endpoint: ep, Bucket: bucket, AccessKey: ak, SecretKey: sk, CreateBucket: true}); err != nil {
		t.Fatal(err)
	}
	// Bucket and Prefix come from the location, not the options.
	o := S3Options{Endpoint: ep, AccessKey: ak, SecretKey: sk, Bucket: "other", Prefix: "other"}
	s, err := Open(ctx, "s3://"+bucket+"/env/prefix", o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s3, ok := s.(*S3)
	if !ok {
		t.Fatalf("Open = %T, want *S3", s)
	}
	if s3.prefix != "env/prefix/" || s3.bucket != bucket {
		t.Errorf("Open parsed bucket %q prefix %q", s3.bucket, s3.prefix)
	}
	mustPut(t, s, "k", []byte("v"))
	if got := string(mustGet(t, s, "k")); got != "v" {
		t.Errorf("round trip = %q", got)
	}
	if _, err := Open(ctx, "s3://no-such-bucket-"+bucket, o); err == nil {
		t.Error("Open of a missing bucket: want error")
	}
	if _, err := OpenLazy(ctx, "s3://no-such-bucket-"+bucket, o); err != nil {
		t.Errorf("OpenLazy contacted the server: %v", err)
	}
}

package access

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// damage rewrites the file at path: cut to half its size, or its first
// 16 KiB overwritten (both meta pages).
func damage(t *testing.T, path, how string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	switch how {
	case "cut short":
		err = os.Truncate(path, fi.Size()/2)
	case "overwritten":
		var f *os.File
		if f, err = os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			junk := make([]byte, 16<<10)
			for i := range junk {
				junk[i] = byte(i*7 + 3)
			}
			_, err = f.WriteAt(junk, 0)
			f.Close()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A counters.db or access.db cut short (a full disk, an interrupted copy)
// crashed eo serve with a SIGBUS ("fatal error: fault") when bbolt read
// past the end of the mapped file. Opening one must fail with ErrDamaged,
// naming the file, and leave it as it was.
func TestDamagedDatabaseFiles(t *testing.T) {
	for _, how := range []string{"cut short", "overwritten"} {
		t.Run("counters.db "+how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "counters.db")
			e := openEmbedded(t, path, time.Hour)
			recordN(t, e, "ev", 60000) // a file of many pages
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			damage(t, path, how)
			before, _ := os.ReadFile(path)
			_, err := OpenEmbedded(path, time.Hour)
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("open a counters.db %s: %v, want ErrDamaged", how, err)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Fatal("the damaged file was changed")
			}
		})
		t.Run("access.db "+how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "access.db")
			s, err := Open(path, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 300 {
				if _, err := s.CreateAccount("account "+string(rune('a'+i%26)), 0); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			damage(t, path, how)
			if _, err := Open(path, time.Now); !errors.Is(err, ErrDamaged) {
				t.Fatalf("open an access.db %s: %v, want ErrDamaged", how, err)
			}
			if _, err := OpenKeyring(path, time.Now); !errors.Is(err, ErrDamaged) {
				t.Fatalf("keyring of an access.db %s: %v, want ErrDamaged", how, err)
			}
		})
	}
}

// A second process opening a counters.db that an edge holds waited 5 s
// and failed with bbolt's bare "timeout"; it must say the file is in use.
func TestCountersDBInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counters.db")
	e := openEmbedded(t, path, time.Hour)
	defer e.Close()
	// bbolt's lock is an flock, which another open file description in
	// this process meets as another process would.
	_, err := openBoltFile(path, &bolt.Options{Timeout: 100 * time.Millisecond}, countersInUse)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "own work folder") {
		t.Fatalf("open a counters.db another handle holds: %v, want ErrInUse with the fix", err)
	}
}

// access.db is held by an eo keys command while it changes the keys (an
// edge only copies it, under a shared lock); a second eo keys waits 5 s
// and is told that, not that an edge holds it.
func TestAccessDBInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.db")
	st, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = Open(path, nil)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "another eo keys command") || strings.Contains(err.Error(), "edge") {
		t.Fatalf("a second eo keys on a held access.db: %v, want ErrInUse naming eo keys", err)
	}
}

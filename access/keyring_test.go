package access

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/reload"
)

// keyPattern is the spec's key format, written independently of
// validKeyFormat.
var keyPattern = regexp.MustCompile(`^(eo_live_|eo_sandbox_)[0-9a-f]{48}$`)

func TestValidKeyFormat(t *testing.T) {
	hex48 := strings.Repeat("0123456789abcdef", 3)
	for _, k := range []string{
		"", "eo_live_", "eo_live_" + hex48, "eo_sandbox_" + hex48, "eo_live_" + hex48 + "0",
		"eo_live_" + hex48[:47], "eo_live_" + strings.ToUpper(hex48), "eo_test_" + hex48,
		"eo_sandbox_" + hex48[:47] + "g", "xeo_live_" + hex48[1:], "eo_live_" + hex48[:47] + "\x00",
	} {
		if got, want := validKeyFormat(k), keyPattern.MatchString(k); got != want {
			t.Errorf("validKeyFormat(%q) = %v, the spec's pattern says %v", k, got, want)
		}
	}
}

// withStore opens the key file read-write, runs fn, and closes it, as one
// `eo keys` invocation does.
func withStore(t *testing.T, path string, clk *clock, fn func(s *Store)) {
	t.Helper()
	s, err := Open(path, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	fn(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// keyringOn makes a key file on a fake clock, fills it with fill (one
// `eo keys` invocation), and opens a keyring on it, as eo serve does.
func keyringOn(t *testing.T, fill func(s *Store)) (kr *Keyring, path string, clk *clock) {
	t.Helper()
	clk = newClock(time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC))
	path = filepath.Join(t.TempDir(), "access.db")
	withStore(t, path, clk, fill)
	kr, err := OpenKeyring(path, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	return kr, path, clk
}

func TestKeyringFollowsTheStore(t *testing.T) {
	var plain, sandbox, acctID, keyID string
	kr, path, clk := keyringOn(t, func(s *Store) {
		a, _ := s.CreateAccount("acme", 7)
		acctID = a.ID
		var k Key
		var err error
		if plain, k, err = s.CreateKey(a.ID, PlanStandard); err != nil {
			t.Fatal(err)
		}
		keyID = k.ID
		if sandbox, _, err = s.CreateKey(a.ID, PlanSandbox); err != nil {
			t.Fatal(err)
		}
	})
	p, err := kr.Authenticate(ctx(), plain)
	if err != nil || p.KeyID != keyID || p.AccountID != acctID || p.Plan != PlanStandard || strings.Contains(p.Display, plain[8:40]) {
		t.Fatalf("authenticate: %+v %v", p, err)
	}
	if p, err := kr.Authenticate(ctx(), sandbox); err != nil || p.Plan != PlanSandbox {
		t.Fatalf("sandbox: %+v %v", p, err)
	}
	unknown := "eo_live_" + strings.Repeat("ab", 24)
	for _, k := range []string{unknown, "", "eo_live_short", plain + "0", strings.ToUpper(plain)} {
		if _, err := kr.Authenticate(ctx(), k); err != ErrInvalidKey {
			t.Fatalf("%q: %v, want ErrInvalidKey", k, err)
		}
	}
	if a, err := kr.GetAccount(acctID); err != nil || a.TrialEnds == nil {
		t.Fatalf("account: %+v %v", a, err)
	}
	if _, err := kr.GetAccount("nope"); err != ErrNotFound {
		t.Fatalf("unknown account: %v", err)
	}

	// The keyring holds no lock: the store opens read-write beside it (as
	// `eo keys` does beside `eo serve`), and the changes appear on reload.
	var rotated string
	withStore(t, path, clk, func(s *Store) {
		if _, err := s.Subscribe(acctID); err != nil {
			t.Fatal(err)
		}
		var err error
		if rotated, _, err = s.Rotate(keyID); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := kr.Authenticate(ctx(), rotated); err != ErrInvalidKey {
		t.Fatalf("a key created after the last reload: %v", err)
	}
	if changed, err := kr.Reload(); err != nil || !changed {
		t.Fatalf("reload: changed=%v %v", changed, err)
	}
	if changed, err := kr.Reload(); err != nil || changed {
		t.Fatalf("second reload of an unchanged file: changed=%v %v", changed, err)
	}
	if _, err := kr.Authenticate(ctx(), rotated); err != nil {
		t.Fatalf("rotated key after reload: %v", err)
	}
	if a, _ := kr.GetAccount(acctID); a.SubscribedAt == nil {
		t.Fatalf("subscription not reloaded: %+v", a)
	}
	// The old key keeps working for 24 h after the rotation, then 401,
	// by the clock alone.
	clk.Add(24*time.Hour - time.Second)
	if _, err := kr.Authenticate(ctx(), plain); err != nil {
		t.Fatalf("old key inside the grace period: %v", err)
	}
	if !kr.Active(keyID) {
		t.Fatal("Active: the rotated key inside its grace period is not active")
	}
	clk.Add(time.Second)
	if _, err := kr.Authenticate(ctx(), plain); err != ErrInvalidKey {
		t.Fatalf("old key after 24 h: %v", err)
	}
	if kr.Active(keyID) || kr.Active("no-such-key") {
		t.Fatal("Active: an expired or unknown key id is active")
	}

	// Revocation, of a key the keyring has seen since its last reload
	// (its known keys skip the hash, never the revocation).
	if _, err := kr.Authenticate(ctx(), sandbox); err != nil {
		t.Fatalf("sandbox before its revocation: %v", err)
	}
	withStore(t, path, clk, func(s *Store) {
		ks, _ := s.Keys(acctID)
		for _, k := range ks {
			if k.Plan == PlanSandbox {
				if err := s.Revoke(k.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	if _, err := kr.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Authenticate(ctx(), sandbox); err != ErrInvalidKey {
		t.Fatalf("revoked key: %v", err)
	}
}

func TestKeyringWatchAndBadFile(t *testing.T) {
	var acct string
	kr, path, clk := keyringOn(t, func(s *Store) {
		a, _ := s.CreateAccount("acme", 0)
		acct = a.ID
	})
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	go kr.Watch(c, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	var plain string
	withStore(t, path, clk, func(s *Store) { plain, _, _ = s.CreateKey(acct, PlanStandard) })
	if !proctest.Within(10*time.Second, 5*time.Millisecond, func() bool {
		_, err := kr.Authenticate(ctx(), plain)
		return err == nil
	}) {
		t.Fatal("Watch did not pick up a key created beside it")
	}

	// A file that is not a bolt database: OpenKeyring fails with a clear
	// error; an existing keyring whose file is damaged keeps its keys.
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenKeyring(junk, clk.Now); err == nil || !strings.Contains(err.Error(), "keyring") {
		t.Fatalf("junk file: %v", err)
	}
	if _, err := OpenKeyring(filepath.Join(t.TempDir(), "missing.db"), clk.Now); err == nil {
		t.Fatal("missing file opened")
	}
	cancel()
	if err := os.WriteFile(path, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := kr.Reload(); err == nil || changed {
		t.Fatalf("reload of a damaged file: changed=%v err=%v", changed, err)
	}
	if _, err := kr.Authenticate(ctx(), plain); err != nil {
		t.Fatalf("keys lost after a failed reload: %v", err)
	}
}

// TestKeyringSurvivesAFileRewrittenUnderIt: an operator restoring
// access.db with cp (truncate, then write) while the edge reloads it must
// not crash the edge. The keyring used to read the file through bbolt's
// mmap, and touching a mapped page past the truncated end is a SIGBUS that
// kills the process; now it reads a private copy, and a torn copy is a
// failed reload that keeps the keys.
func TestKeyringSurvivesAFileRewrittenUnderIt(t *testing.T) {
	var plain string
	kr, path, _ := keyringOn(t, func(s *Store) {
		a, _ := s.CreateAccount("acme", 0)
		for i := 0; i < 3000; i++ { // a file of a few MB: reads take a while
			p, _, err := s.CreateKey(a.ID, PlanStandard)
			if err != nil {
				t.Fatal(err)
			}
			plain = p
		}
	})
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Force a read on every reload (not only when the file's stamp moved).
	if kr.cur, err = reload.Start(context.Background(), func(ctx context.Context, _ *keyringData) (*keyringData, error) {
		return kr.load(ctx, nil)
	}); err != nil {
		t.Fatal(err)
	}
	stop := proctest.Hammer(1, func(int) { _, _ = kr.Reload() })
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		// What cp does: truncate, then write the bytes back in chunks.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(good); off += 64 << 10 {
			end := min(off+64<<10, len(good))
			_, _ = f.Write(good[off:end])
		}
		f.Close()
	}
	stop()
	if _, err := kr.Authenticate(ctx(), plain); err != nil {
		t.Fatalf("keys lost: %v", err)
	}
}

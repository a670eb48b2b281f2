package access

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/redistest"
)

// TestRedisKeysAreSharedByEveryHost: two `eo keys` hosts and two edges'
// keyrings on one Redis behave as one store: a key created on one host
// authenticates on both edges, a rotation or revocation from the other
// host applies on both, and Watch picks a revocation up by itself.
func TestRedisKeysAreSharedByEveryHost(t *testing.T) {
	url := redistest.Start(t)
	clk := newClock(time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC))
	hostA, hostB := openRedisStore(t, url, clk), openRedisStore(t, url, clk)
	a, plain, k := newAccountKey(t, hostA, "acme", PlanStandard)
	if got, err := hostB.GetKey(k.ID); err != nil || got.Hash != k.Hash {
		t.Fatalf("host B reads the key created on host A: %+v %v", got, err)
	}
	if _, _, err := hostB.CreateKey(a.ID, PlanSandbox); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hostA.CreateKey(a.ID, PlanSandbox); err != ErrSandboxExists {
		t.Fatalf("a second sandbox key through the other host: %v", err)
	}
	edge1, edge2 := openRedisRing(t, url, "", clk), openRedisRing(t, url, "", clk)
	for i, kr := range []*Keyring{edge1, edge2} {
		if p, err := kr.Authenticate(ctx(), plain); err != nil || p.KeyID != k.ID || p.AccountID != a.ID {
			t.Fatalf("edge %d: %+v %v", i+1, p, err)
		}
		if changed, err := kr.Reload(); err != nil || changed {
			t.Fatalf("edge %d: reload with nothing changed: changed=%v %v", i+1, changed, err)
		}
	}

	rotated, _, err := hostB.Rotate(k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hostB.Subscribe(a.ID); err != nil {
		t.Fatal(err)
	}
	for i, kr := range []*Keyring{edge1, edge2} {
		if changed, err := kr.Reload(); err != nil || !changed {
			t.Fatalf("edge %d: reload after a rotation: changed=%v %v", i+1, changed, err)
		}
		if _, err := kr.Authenticate(ctx(), rotated); err != nil {
			t.Fatalf("edge %d: the rotated key: %v", i+1, err)
		}
		if acct, _ := kr.GetAccount(a.ID); acct.SubscribedAt == nil {
			t.Fatalf("edge %d: the subscription did not arrive: %+v", i+1, acct)
		}
	}

	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	discard := slog.New(slog.DiscardHandler)
	go edge1.Watch(c, 20*time.Millisecond, discard)
	go edge2.Watch(c, 20*time.Millisecond, discard)
	ks, _ := hostA.Keys(a.ID)
	if len(ks) != 3 {
		t.Fatalf("keys of the account: %d, want 3 (the rotated one, its replacement, the sandbox key)", len(ks))
	}
	if err := hostA.Revoke(ks[len(ks)-1].ID); err != nil { // the newest: the rotation's
		t.Fatal(err)
	}
	if !proctest.Within(5*time.Second, 5*time.Millisecond, func() bool {
		_, err1 := edge1.Authenticate(ctx(), rotated)
		_, err2 := edge2.Authenticate(ctx(), rotated)
		return err1 == ErrInvalidKey && err2 == ErrInvalidKey
	}) {
		t.Fatal("a revocation from host A never reached an edge's keyring")
	}
}

// TestRedisKeyringStartsFromItsCacheWhenRedisIsDown: an edge restarted
// while Redis is down serves the keys of its last good read, and follows
// Redis again once it is back; with no cache it refuses to start, saying
// why.
func TestRedisKeyringStartsFromItsCacheWhenRedisIsDown(t *testing.T) {
	srv := redistest.StartServer(t)
	clk := newClock(time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC))
	st := openRedisStore(t, srv.URL, clk)
	_, plain, _ := newAccountKey(t, st, "acme", PlanStandard)
	cache := filepath.Join(t.TempDir(), "keys.cache.json")
	first := openRedisRing(t, srv.URL, cache, clk)
	if _, err := first.Authenticate(ctx(), plain); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(cache); err != nil || strings.Contains(string(b), plain) || !strings.Contains(string(b), hashKey(plain)) {
		t.Fatalf("the cache holds the key itself, or not its hash: %.200s", b)
	}

	srv.Kill()
	o := RedisOptions{Timeout: 200 * time.Millisecond, MaxRetries: NoRetries}
	if _, err := OpenRedisKeyring(ctx(), srv.URL, "eo:", o, "", clk.Now, nil); err == nil ||
		!strings.Contains(err.Error(), "redis") {
		t.Fatalf("a start with Redis down and no cache: %v", err)
	}
	restarted, err := OpenRedisKeyring(ctx(), srv.URL, "eo:", o, cache, clk.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("a start with Redis down and a cache: %v", err)
	}
	defer restarted.Close()
	if _, err := restarted.Authenticate(ctx(), plain); err != nil {
		t.Fatalf("the cached key: %v", err)
	}
	if _, err := restarted.Reload(); err == nil {
		t.Fatal("a reload with Redis down succeeded")
	}

	srv.Restart() // redistest keeps no data: the store is empty again
	st2 := openRedisStore(t, srv.URL, clk)
	_, plain2, _ := newAccountKey(t, st2, "beta", PlanStandard)
	if changed, err := restarted.Reload(); err != nil || !changed {
		t.Fatalf("reload with Redis back: changed=%v %v", changed, err)
	}
	if _, err := restarted.Authenticate(ctx(), plain2); err != nil {
		t.Fatalf("a key created after Redis came back: %v", err)
	}
	if _, err := restarted.Authenticate(ctx(), plain); err != ErrInvalidKey {
		t.Fatalf("a key Redis no longer holds: %v", err)
	}
}

// TestCopyFromMovesAKeyFileIntoRedis: `eo keys import` copies a host's
// key file into the shared store once; keys keep working, nothing is
// copied twice.
func TestCopyFromMovesAKeyFileIntoRedis(t *testing.T) {
	url := redistest.Start(t)
	clk := newClock(time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC))
	file, err := Open(filepath.Join(t.TempDir(), "access.db"), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	a, _ := file.CreateAccount("acme", 14)
	plain, _, _ := file.CreateKey(a.ID, PlanTrial)
	revoked, rk, _ := file.CreateKey(a.ID, PlanStandard)
	_ = file.Revoke(rk.ID)
	shared := openRedisStore(t, url, clk)
	if na, nk, err := shared.CopyFrom(file); err != nil || na != 1 || nk != 2 {
		t.Fatalf("copy: %d accounts, %d keys, %v; want 1, 2", na, nk, err)
	}
	if na, nk, err := shared.CopyFrom(file); err != nil || na != 0 || nk != 0 {
		t.Fatalf("second copy: %d accounts, %d keys, %v; want 0, 0", na, nk, err)
	}
	kr := openRedisRing(t, url, "", clk)
	if p, err := kr.Authenticate(ctx(), plain); err != nil || p.Plan != PlanTrial {
		t.Fatalf("copied key: %+v %v", p, err)
	}
	if _, err := kr.Authenticate(ctx(), revoked); err != ErrInvalidKey {
		t.Fatalf("a key revoked before the copy: %v", err)
	}
	if acct, err := kr.GetAccount(a.ID); err != nil || acct.TrialEnds == nil || !acct.TrialEnds.Equal(*a.TrialEnds) {
		t.Fatalf("copied account: %+v %v", acct, err)
	}
}

func openRedisStore(t *testing.T, url string, clk *clock) *Store {
	t.Helper()
	s, err := OpenRedisKeys(ctx(), url, "eo:", RedisOptions{}, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openRedisRing(t *testing.T, url, cache string, clk *clock) *Keyring {
	t.Helper()
	kr, err := OpenRedisKeyring(ctx(), url, "eo:", RedisOptions{}, cache, clk.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kr.Close() })
	return kr
}

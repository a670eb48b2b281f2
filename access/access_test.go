package access

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/redistest"
	"github.com/eodata/eo/store"
)

// clock is a fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock(t time.Time) *clock    { return &clock{t: t} }
func ctx() context.Context           { return context.Background() }

// backends runs a test against every Counters implementation.
func backends(t *testing.T, fn func(t *testing.T, c Counters)) {
	t.Run("embedded", func(t *testing.T) {
		e := openEmbedded(t, filepath.Join(t.TempDir(), "c.db"), 10*time.Millisecond)
		fn(t, e)
	})
	t.Run("redis", func(t *testing.T) {
		r := openRedis(t, redistest.Start(t), "t:")
		fn(t, r)
	})
}

func TestCountersBucket(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i < 100; i++ {
			r, err := c.TakeToken(ctx(), "b1", 100, 20, now)
			if err != nil || !r.OK {
				t.Fatalf("token %d: %+v %v", i, r, err)
			}
		}
		r, _ := c.TakeToken(ctx(), "b1", 100, 20, now)
		if r.OK || r.Wait <= 0 || r.Wait > 50*time.Millisecond {
			t.Fatalf("empty bucket: %+v", r)
		}
		// 20 tokens a second: after 100 ms two tokens are back.
		now = now.Add(100 * time.Millisecond)
		for i := 0; i < 2; i++ {
			if r, _ := c.TakeToken(ctx(), "b1", 100, 20, now); !r.OK {
				t.Fatalf("refill token %d refused", i)
			}
		}
		if r, _ := c.TakeToken(ctx(), "b1", 100, 20, now); r.OK {
			t.Fatal("a third token appeared")
		}
		// A full refill takes five seconds of silence, never above capacity.
		now = now.Add(time.Hour)
		r, _ = c.TakeToken(ctx(), "b1", 100, 20, now)
		if !r.OK || int(r.Remaining) != 99 {
			t.Fatalf("full bucket: %+v", r)
		}
		// Buckets are independent per key.
		if r, _ := c.TakeToken(ctx(), "b2", 100, 20, now); !r.OK || int(r.Remaining) != 99 {
			t.Fatalf("second key: %+v", r)
		}
	})
}

func TestCountersConsumeAllOrNothing(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		cs := []Counter{{Key: "total", Limit: 5}, {Key: "ep", Limit: 3}}
		for i := 0; i < 3; i++ {
			if r, err := c.Consume(ctx(), now, cs); err != nil || !r.OK {
				t.Fatalf("consume %d: %+v %v", i, r, err)
			}
		}
		r, _ := c.Consume(ctx(), now, cs)
		if r.OK || r.Failed != 1 || r.Values[0] != 3 || r.Values[1] != 3 {
			t.Fatalf("the endpoint ceiling must refuse without counting: %+v", r)
		}
		// Another endpoint still draws from the same total.
		other := []Counter{{Key: "total", Limit: 5}, {Key: "ep2", Limit: 3}}
		for i := 0; i < 2; i++ {
			if r, _ := c.Consume(ctx(), now, other); !r.OK {
				t.Fatalf("other endpoint %d refused", i)
			}
		}
		if r, _ := c.Consume(ctx(), now, other); r.OK || r.Failed != 0 {
			t.Fatalf("the total must refuse first: %+v", r)
		}
		vals, _ := c.Get(ctx(), now, []string{"total", "ep", "ep2", "missing"})
		if fmt.Sprint(vals) != "[5 3 2 0]" {
			t.Fatalf("values: %v", vals)
		}
	})
}

func TestCountersExpire(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		now := time.Now().UTC()
		cs := []Counter{{Key: "m", Limit: 1, ExpireAt: now.Add(300 * time.Millisecond)}}
		if r, _ := c.Consume(ctx(), now, cs); !r.OK {
			t.Fatal("first")
		}
		if r, _ := c.Consume(ctx(), now, cs); r.OK {
			t.Fatal("over the limit")
		}
		time.Sleep(400 * time.Millisecond) // Redis expires on its own clock
		later := now.Add(400 * time.Millisecond)
		if r, _ := c.Consume(ctx(), later, cs); !r.OK {
			t.Fatal("an expired counter must start over")
		}
	})
}

func TestCountersConcurrentNeverExceed(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		now := time.Now()
		var ok int64
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					if r, err := c.Consume(ctx(), now, []Counter{{Key: "conc", Limit: 137}}); err == nil && r.OK {
						mu.Lock()
						ok++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if ok != 137 {
			t.Fatalf("%d requests admitted, want exactly 137", ok)
		}
	})
}

func TestCountersUsage(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		for i := 0; i < 25; i++ {
			if err := c.Record(ctx(), UsageEvent{Time: t0.Add(time.Duration(i) * time.Second), KeyID: "k", AccountID: "a",
				Endpoint: "GET /v1/{game}/matches", Status: 200, RequestID: strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		evs, pos, err := c.ReadUsage(ctx(), "", 10)
		if err != nil || len(evs) != 10 || evs[0].RequestID != "0" || evs[9].RequestID != "9" {
			t.Fatalf("first page: %v %v", evs, err)
		}
		rest, _, err := c.ReadUsage(ctx(), pos, 100)
		if err != nil || len(rest) != 15 || rest[0].RequestID != "10" || !rest[0].Time.Equal(t0.Add(10*time.Second)) {
			t.Fatalf("rest: %v %v", rest, err)
		}
		// The export writes Parquet and advances a watermark.
		st := store.NewMemory()
		n, err := ExportUsage(ctx(), c, st, 20)
		if err != nil || n != 25 {
			t.Fatalf("export: %d %v", n, err)
		}
		objs, _ := st.List(ctx(), UsagePrefix)
		if len(objs) != 2 {
			t.Fatalf("export files: %v", objs)
		}
		if n, _ := ExportUsage(ctx(), c, st, 20); n != 0 {
			t.Fatalf("a second export re-exported %d events", n)
		}
	})
}

func newMeter(t *testing.T, c Counters, clk *clock, keys *Store, plans map[string]PlanLimits) *Meter {
	if plans == nil {
		plans = DefaultPlans()
	}
	return &Meter{C: c, Plans: plans, Accounts: keys, Now: clk.Now}
}

func header(d Decision, name string) string {
	for _, h := range d.Headers() {
		if h[0] == name {
			return h[1]
		}
	}
	return ""
}

// openEmbedded opens embedded counters at path that flush every flush;
// they are closed when the test ends.
func openEmbedded(t testing.TB, path string, flush time.Duration) *Embedded {
	t.Helper()
	e, err := OpenEmbedded(path, flush)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// openRedis opens counters on the Redis at url under the key prefix; they
// are closed when the test ends.
func openRedis(t testing.TB, url, prefix string) *Redis {
	t.Helper()
	r, err := OpenRedis(ctx(), url, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func openKeys(t *testing.T, clk *clock) *Store {
	s, err := Open(filepath.Join(t.TempDir(), "keys.db"), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newAccountKey creates an account named name (no trial) on s and a key of
// plan on it, failing t on an error: the account, the key's plaintext and
// its record.
func newAccountKey(t *testing.T, s *Store, name, plan string) (Account, string, Key) {
	t.Helper()
	a, err := s.CreateAccount(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	plain, k, err := s.CreateKey(a.ID, plan)
	if err != nil {
		t.Fatal(err)
	}
	return a, plain, k
}

func TestMeterStandardMonthAndBucket(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		clk := newClock(time.Date(2026, 1, 31, 23, 59, 0, 0, time.UTC))
		keys := openKeys(t, clk)
		plans := DefaultPlans()
		plans[PlanStandard] = PlanLimits{Burst: 3, Rate: 1, MonthlyQuota: 5}
		m := newMeter(t, c, clk, keys, plans)
		p := Principal{KeyID: "k1", AccountID: "acct1", Plan: PlanStandard}
		for i := 0; i < 3; i++ {
			d, err := m.Check(ctx(), p, "GET /x", true)
			if err != nil || d.Code != "" {
				t.Fatalf("request %d: %+v %v", i, d, err)
			}
		}
		d, _ := m.Check(ctx(), p, "GET /x", true)
		if d.Code != "rate_limited" || d.RetryAfter != 1 || header(d, "X-RateLimit-Remaining") != "0" {
			t.Fatalf("empty bucket: %+v", d)
		}
		if header(d, "X-Quota-Remaining") != "2" || header(d, "X-Quota-Reset") != "2026-02-01T00:00:00Z" {
			t.Fatalf("a rate-limited request must not draw quota: %+v", d.Headers())
		}
		// Burst 3 at 1 token/s, empty: full again in 3 s; the IETF fields
		// say the same as the X- ones.
		for name, want := range map[string]string{"X-RateLimit-Reset": "3", "RateLimit-Policy": `"burst";q=3;w=3`,
			"RateLimit": `"burst";r=0;t=3`} {
			if got := header(d, name); got != want {
				t.Errorf("empty bucket: %s %q, want %q", name, got, want)
			}
		}
		clk.Add(10 * time.Second)
		for i := 0; i < 2; i++ {
			if d, _ := m.Check(ctx(), p, "GET /x", true); d.Code != "" {
				t.Fatalf("after refill %d: %+v", i, d)
			}
		}
		d, _ = m.Check(ctx(), p, "GET /x", true)
		if d.Code != "quota_exceeded" || d.RetryAfter < 1 || d.RetryAfter > 50 || header(d, "X-Quota-Remaining") != "0" {
			t.Fatalf("quota: %+v", d)
		}
		// Another key of the same account shares the quota (its own bucket).
		p2 := Principal{KeyID: "k2", AccountID: "acct1", Plan: PlanStandard}
		if d, _ := m.Check(ctx(), p2, "GET /x", true); d.Code != "quota_exceeded" {
			t.Fatalf("quota is per account: %+v", d)
		}
		// The calendar month rolls over in UTC.
		clk.Add(2 * time.Minute)
		d, _ = m.Check(ctx(), p, "GET /x", true)
		if d.Code != "" || header(d, "X-Quota-Remaining") != "4" || header(d, "X-Quota-Reset") != "2026-03-01T00:00:00Z" {
			t.Fatalf("new month: %+v", d)
		}
		// Token-only endpoints (ws-token) draw no quota.
		clk.Add(10 * time.Second)
		d, _ = m.Check(ctx(), p, "POST /ws-token", false)
		if d.Code != "" || header(d, "X-Quota-Remaining") != "4" {
			t.Fatalf("token only: %+v", d)
		}
	})
}

func TestMeterTrial(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		clk := newClock(time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC))
		keys := openKeys(t, clk)
		acct, _ := keys.CreateAccount("trialist", 14)
		_, k, _ := keys.CreateKey(acct.ID, PlanTrial)
		plans := DefaultPlans()
		plans[PlanTrial] = PlanLimits{Burst: 1000, Rate: 1000, TrialTotal: 5, TrialPerEndpoint: 3}
		plans[PlanStandard] = PlanLimits{Burst: 1000, Rate: 1000, MonthlyQuota: 20000}
		m := newMeter(t, c, clk, keys, plans)
		p := Principal{KeyID: k.ID, AccountID: acct.ID, Plan: PlanTrial}
		for i := 0; i < 3; i++ {
			if d, _ := m.Check(ctx(), p, "GET /a", true); d.Code != "" {
				t.Fatalf("a %d: %+v", i, d)
			}
		}
		d, _ := m.Check(ctx(), p, "GET /a", true)
		if d.Code != "trial_endpoint_quota_exceeded" || d.RetryAfter != 0 {
			t.Fatalf("endpoint ceiling: %+v", d)
		}
		if header(d, "X-Quota-Limit") != "3" || header(d, "X-Quota-Reset") != acct.TrialEnds.Format(time.RFC3339) {
			t.Fatalf("trial headers: %v", d.Headers())
		}
		for i := 0; i < 2; i++ {
			if d, _ := m.Check(ctx(), p, "GET /b", true); d.Code != "" {
				t.Fatalf("b %d: %+v", i, d)
			}
		}
		if d, _ := m.Check(ctx(), p, "GET /c", true); d.Code != "trial_quota_exceeded" {
			t.Fatalf("total: %+v", d)
		}
		// Subscribing ends the trial: the standard quota, no endpoint ceiling.
		if _, err := keys.Subscribe(acct.ID); err != nil {
			t.Fatal(err)
		}
		pr, err := keys.Authenticate(ctx(), "x") // sanity: bad keys refused
		if err == nil {
			t.Fatalf("bad key accepted: %+v", pr)
		}
		k2, _ := keys.GetKey(k.ID)
		p.Plan = k2.Plan
		for i := 0; i < 10; i++ {
			if d, _ := m.Check(ctx(), p, "GET /a", true); d.Code != "" {
				t.Fatalf("after subscribing %d: %+v", i, d)
			}
		}
		// A trial that ended without subscribing is refused.
		other, _ := keys.CreateAccount("lapsed", 1)
		_, k3, _ := keys.CreateKey(other.ID, PlanTrial)
		clk.Add(25 * time.Hour)
		if d, _ := m.Check(ctx(), Principal{KeyID: k3.ID, AccountID: other.ID, Plan: PlanTrial}, "GET /a", true); d.Code != "forbidden" {
			t.Fatalf("ended trial: %+v", d)
		}
	})
}

func TestMeterSandbox(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		clk := newClock(time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC))
		plans := DefaultPlans()
		plans[PlanSandbox] = PlanLimits{Burst: 20, Rate: 5, LifetimeQuota: 4}
		m := newMeter(t, c, clk, openKeys(t, clk), plans)
		p := Principal{KeyID: "sb", AccountID: "a", Plan: PlanSandbox}
		for i := 0; i < 4; i++ {
			if d, _ := m.Check(ctx(), p, "GET /a", true); d.Code != "" || header(d, "X-RateLimit-Limit") != "20" {
				t.Fatalf("%d: %+v", i, d)
			}
		}
		clk.Add(400 * 24 * time.Hour) // never resets
		d, _ := m.Check(ctx(), p, "GET /a", true)
		if d.Code != "sandbox_quota_exceeded" || d.RetryAfter != 0 || header(d, "X-Quota-Reset") != NeverResets {
			t.Fatalf("sandbox: %+v", d)
		}
	})
}

func TestKeysLifecycle(t *testing.T) {
	clk := newClock(time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC))
	s := openKeys(t, clk)
	a, _ := s.CreateAccount("acme", 0)
	plain, k, err := s.CreateKey(a.ID, PlanStandard)
	if err != nil || !keyPattern.MatchString(plain) || !strings.HasPrefix(plain, "eo_live_") || len(plain) != 8+48 {
		t.Fatalf("key format: %q %v", plain, err)
	}
	if k.Display() != "eo_live_…"+plain[len(plain)-4:] || strings.Contains(k.Hash, plain) {
		t.Fatalf("display %q", k.Display())
	}
	sb, _, err := s.CreateKey(a.ID, PlanSandbox)
	if err != nil || !strings.HasPrefix(sb, "eo_sandbox_") {
		t.Fatalf("sandbox key %q %v", sb, err)
	}
	if _, _, err := s.CreateKey(a.ID, PlanSandbox); err != ErrSandboxExists {
		t.Fatalf("second sandbox key: %v", err)
	}
	// Nothing stored holds the plaintext.
	dbPath := s.b.(*boltKeys).db.Path()
	s.Close()
	raw, _ := os.ReadFile(dbPath)
	if strings.Contains(string(raw), plain) || strings.Contains(string(raw), sb) {
		t.Fatal("a plaintext key is stored")
	}
	s2, err := Open(dbPath, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if p, err := s2.Authenticate(ctx(), plain); err != nil || p.AccountID != a.ID || p.Plan != PlanStandard {
		t.Fatalf("authenticate: %+v %v", p, err)
	}
	// Rotation: the old key works for 24 h, then 401.
	newPlain, nk, err := s2.Rotate(k.ID)
	if err != nil || newPlain == plain || nk.Plan != PlanStandard {
		t.Fatalf("rotate: %v", err)
	}
	clk.Add(23 * time.Hour)
	if _, err := s2.Authenticate(ctx(), plain); err != nil {
		t.Fatal("rotated key must work during the grace period")
	}
	clk.Add(time.Hour)
	if _, err := s2.Authenticate(ctx(), plain); err != ErrInvalidKey {
		t.Fatal("rotated key must fail after 24 h")
	}
	if _, err := s2.Authenticate(ctx(), newPlain); err != nil {
		t.Fatal("replacement key refused")
	}
	if err := s2.Revoke(nk.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Authenticate(ctx(), newPlain); err != ErrInvalidKey {
		t.Fatal("revoked key accepted")
	}
	if _, err := s2.Authenticate(ctx(), "eo_live_"+strings.Repeat("0", 48)); err != ErrInvalidKey {
		t.Fatal("unknown key accepted")
	}
}

// TestCrashRecovery: a process counting requests is killed with SIGKILL; the
// counters it had flushed are all there after a restart.
func TestCrashRecovery(t *testing.T) {
	if os.Getenv("EO_CRASH_CHILD") != "" {
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	child := proctest.StartChild(t, "TestCrashChild", "EO_CRASH_CHILD="+path)
	// Wait for the child to report it counted; then kill -9 it mid-flight.
	if !proctest.Within(30*time.Second, 5*time.Millisecond, func() bool { return strings.Contains(child.Out.String(), "COUNTED") }) {
		t.Fatalf("child: %s", child.Out.String())
	}
	time.Sleep(3 * DefaultFlushInterval) // past the documented loss window
	child.Kill()
	e := openEmbedded(t, path, 0)
	vals, _ := e.Get(ctx(), time.Now(), []string{"q:month:acct"})
	if vals[0] != 777 {
		t.Fatalf("after kill -9 the counter is %d, want 777", vals[0])
	}
	evs, _, _ := e.ReadUsage(ctx(), "", 10000)
	if len(evs) != 777 {
		t.Fatalf("after kill -9 %d usage events, want 777", len(evs))
	}
}

func TestCrashChild(t *testing.T) {
	path := os.Getenv("EO_CRASH_CHILD")
	if path == "" {
		t.Skip("helper process for TestCrashRecovery")
	}
	e, err := OpenEmbedded(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := 0; i < 777; i++ {
		_, _ = e.Consume(ctx(), now, []Counter{{Key: "q:month:acct", Limit: 1 << 30}})
		_ = e.Record(ctx(), UsageEvent{Time: now, KeyID: "k", AccountID: "acct", Endpoint: "GET /x", Status: 200})
	}
	fmt.Println("COUNTED")
	time.Sleep(time.Minute) // killed by the parent
}

// TestFixedHeadersAsFormatted: the header values a monthly plan renders
// once per key and month are the ones AppendHeader formats per request, and
// a plan whose limits change under a running meter is not answered with the
// old plan's rendering.
func TestFixedHeadersAsFormatted(t *testing.T) {
	e, err := OpenEmbedded(filepath.Join(t.TempDir(), "counters.db"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	plans := DefaultPlans()
	plans["odd"] = PlanLimits{Burst: 2.5, Rate: 0.3, MonthlyQuota: 12_345_678_901_234}
	m := &Meter{C: e, Plans: plans, Now: time.Now}
	for _, plan := range []string{PlanStandard, PlanInternal, "odd"} {
		p := Principal{KeyID: "k-" + plan, AccountID: "a-" + plan, Plan: plan}
		d, err := m.Check(ctx(), p, "GET /v1/{game}/matches", true)
		if err != nil || d.Code != "" {
			t.Fatalf("%s: %v %+v", plan, err, d)
		}
		if d.fixed == nil {
			t.Fatalf("%s: a monthly plan's decision without its rendered headers", plan)
		}
		formatted := d
		formatted.fixed = nil
		if got, want := d.Headers(), formatted.Headers(); !slices.Equal(got, want) {
			t.Errorf("%s: rendered %v, formatted %v", plan, got, want)
		}
	}
	// The plan's burst changes; its quota, and so the key's names, do not.
	p := Principal{KeyID: "k-odd", AccountID: "a-odd", Plan: "odd"}
	plans["odd"] = PlanLimits{Burst: 7, Rate: 0.3, MonthlyQuota: 12_345_678_901_234}
	d, err := m.Check(ctx(), p, "GET /v1/{game}/matches", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := header(d, "X-RateLimit-Limit"); got != "7" {
		t.Errorf("X-RateLimit-Limit after the plan changed: %q, want 7", got)
	}
	if got := header(d, "RateLimit-Policy"); got != `"burst";q=7;w=24` {
		t.Errorf("RateLimit-Policy after the plan changed: %q", got)
	}
}

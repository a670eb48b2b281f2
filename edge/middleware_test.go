package edge

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/redistest"
	"github.com/eodata/eo/snapshot"
)

// meteredServer is a test edge with real keys and a real counters backend.
type meteredServer struct {
	*testServer
	keys  *access.Store
	ctr   access.Counters
	logs  *proctest.Buffer
	clock *fakeClock
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newMeteredServer(t testing.TB, ctr access.Counters, keys *access.Store, plans map[string]access.PlanLimits, clk *fakeClock) *meteredServer {
	t.Helper()
	st := fixtureStore(t)
	logs := &proctest.Buffer{}
	if plans == nil {
		plans = access.DefaultPlans()
	}
	ts := &testServer{store: st, now: fixtureNow}
	srv, err := New(Options{Snapshots: snapshot.Options{Store: st, CacheDir: t.TempDir()}, Auth: keys, CursorSecret: []byte("s"),
		Now: clk.Now, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		CORSOrigins: []string{"https://app.example.com"},
		Meter:       &access.Meter{C: ctr, Plans: plans, Accounts: keys, Now: clk.Now}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts.Server = srv
	return &meteredServer{testServer: ts, keys: keys, ctr: ctr, logs: logs, clock: clk}
}

// embeddedMeteredServer is a metered server with the default plans on
// embedded counters at fixtureNow, and its key store.
func embeddedMeteredServer(t testing.TB) (*meteredServer, *access.Store) {
	clk := &fakeClock{t: fixtureNow}
	ctr, err := access.OpenEmbedded(t.TempDir()+"/counters.db", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctr.Close() })
	keys := openTestKeys(t, clk)
	return newMeteredServer(t, ctr, keys, nil, clk), keys
}

func openTestKeys(t testing.TB, clk *fakeClock) *access.Store {
	k, err := access.Open(filepath.Join(t.TempDir(), "keys.db"), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// newTestKey creates an account with one key of plan and returns the key.
func newTestKey(t testing.TB, keys *access.Store, plan string) string {
	t.Helper()
	acct, err := keys.CreateAccount("acme", 0)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := keys.CreateKey(acct.ID, plan)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func openEmbedded(t testing.TB) access.Counters {
	c, err := access.OpenEmbedded(filepath.Join(t.TempDir(), "c.db"), 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// meteredOn is a metered edge on the counters ctr with a new key store, the
// plans (nil: the defaults) and a fake clock at fixtureNow.
func meteredOn(t testing.TB, ctr access.Counters, plans map[string]access.PlanLimits) *meteredServer {
	t.Helper()
	clk := &fakeClock{t: fixtureNow}
	return newMeteredServer(t, ctr, openTestKeys(t, clk), plans, clk)
}

// planServer is a metered edge on embedded counters whose plan has the
// given limits (the other plans their defaults).
func planServer(t testing.TB, plan string, limits access.PlanLimits) *meteredServer {
	t.Helper()
	plans := access.DefaultPlans()
	plans[plan] = limits
	return meteredOn(t, openEmbedded(t), plans)
}

// openRedisCounters opens counters on the Redis at url; they are closed
// when the test ends.
func openRedisCounters(t testing.TB, url string) access.Counters {
	t.Helper()
	r, err := access.OpenRedis(context.Background(), url, "eo:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestMeteredHeadersAndLimits(t *testing.T) {
	ms := planServer(t, access.PlanStandard, access.PlanLimits{Burst: 5, Rate: 1, MonthlyQuota: 8})
	clk := ms.clock
	acct, _ := ms.keys.CreateAccount("acme", 0)
	key, _, _ := ms.keys.CreateKey(acct.ID, access.PlanStandard)
	r := ms.get(t, "/v1/cs2/matches?limit=1", key)
	want := map[string]string{"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "4", "X-Quota-Limit": "8",
		"X-Quota-Remaining": "7", "X-Quota-Reset": "2026-07-01T00:00:00Z",
		// 4 of 5 tokens left at 1 a second: full again in 1 s; drained, in 5.
		"X-RateLimit-Reset": "1", "RateLimit-Policy": `"burst";q=5;w=5`, "RateLimit": `"burst";r=4;t=1`}
	for h, v := range want {
		if got := r.header.Get(h); got != v {
			t.Errorf("%s = %q, want %q", h, got, v)
		}
	}
	// /health draws nothing.
	ms.get(t, "/health", "-")
	for i := 0; i < 4; i++ {
		ms.get(t, "/v1/cs2/teams?limit=1", key)
	}
	r = ms.get(t, "/v1/cs2/teams?limit=1", key)
	if r.status != 429 || r.code(t) != "rate_limited" || r.header.Get("Retry-After") != "1" {
		t.Fatalf("bucket: %d %s %v", r.status, r.body, r.header)
	}
	if r.header.Get("X-Quota-Remaining") != "3" {
		t.Errorf("a rate-limited request must not draw quota: %s", r.header.Get("X-Quota-Remaining"))
	}
	clk.Add(10 * time.Second)
	for i := 0; i < 3; i++ {
		if r := ms.get(t, "/v1/cs2/teams?limit=1", key); r.status != 200 {
			t.Fatalf("after refill: %d", r.status)
		}
	}
	r = ms.get(t, "/v1/cs2/teams?limit=1", key)
	if r.status != 429 || r.code(t) != "quota_exceeded" {
		t.Fatalf("quota: %d %s", r.status, r.body)
	}
	ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if want := int(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC).Sub(clk.Now()).Seconds()); ra < want-1 || ra > want+1 {
		t.Errorf("Retry-After %d, want about %d (until the month ends)", ra, want)
	}
	// Every authenticated request was recorded, with its status.
	evs, _, err := ms.ctr.ReadUsage(context.Background(), "", 1000)
	if err != nil || len(evs) != 10 {
		t.Fatalf("usage events: %d %v", len(evs), err)
	}
	if evs[0].Endpoint != "GET /v1/{game}/matches" || evs[0].Status != 200 || evs[len(evs)-1].Status != 429 ||
		evs[0].AccountID != acct.ID {
		t.Errorf("usage events: first %+v last %+v", evs[0], evs[len(evs)-1])
	}
	// /metrics exports the metering latency under the backend's name (on
	// the embedded backend a sample of the 10 checks: one in 16, so 0 to
	// 10 of them); none failed.
	opKey := newTestKey(t, ms.keys, access.PlanInternal)
	text := string(ms.get(t, "/metrics", opKey).body)
	if n, ok := proctest.MetricValue(text, `eo_metering_duration_seconds_count{backend="embedded"}`); !ok || n > 10 {
		t.Errorf("metering calls timed: %v (exported: %v), want 0 to 10", n, ok)
	}
	if n, ok := proctest.MetricValue(text, `eo_metering_errors_total{backend="embedded"}`); !ok || n != 0 {
		t.Errorf("metering errors: %v (exported: %v), want 0", n, ok)
	}
}

func TestSandboxScope(t *testing.T) {
	ms := planServer(t, access.PlanSandbox, access.PlanLimits{Burst: 1000, Rate: 1000, LifetimeQuota: 1000})
	key := newTestKey(t, ms.keys, access.PlanSandbox)
	s := ms.snap()
	tours, sample := s.Sample()
	if len(tours) != 2 || len(sample) == 0 {
		t.Fatalf("the snapshot must carry a two-event sample: %d events, %d matches", len(tours), len(sample))
	}
	sampleTour, sampleMatch := tours[len(tours)-1], sample[len(sample)-1]
	inSample := map[ID]bool{}
	for _, id := range sample {
		inSample[id] = true
	}
	other := anyMatch(t, s, func(m *Match) bool { return !inSample[m.ID] })
	tourSlug := s.Tournament(sampleTour).Slug
	allowed := []string{
		"/v1/cs2/matches?tournament=" + sampleTour.String(),
		"/v1/cs2/matches/" + sampleMatch.String(),
		"/v1/cs2/matches/" + sampleMatch.String() + "/maps",
		"/v1/cs2/matches/" + sampleMatch.String() + "/history",
		"/v1/cs2/matches/" + sampleMatch.String() + "/depth",
		"/v1/cs2/tournaments/" + sampleTour.String(),
		"/v1/cs2/tournaments/" + tourSlug + "/teams",
		"/v1/cs2/odds?match=" + sampleMatch.String(),
		"/v1/cs2/coverage", "/v1/cs2/model/metrics",
	}
	for _, p := range allowed {
		if r := ms.get(t, p, key); r.status != 200 {
			t.Errorf("sandbox %s: %d %s", p, r.status, r.body)
		}
	}
	used := func() string {
		r := ms.get(t, "/v1/cs2/coverage", key)
		return r.header.Get("X-Quota-Remaining")
	}
	before := used()
	denied := []string{
		"/v1/cs2/matches", "/v1/cs2/matches?tournament=" + other.TournamentID.String(),
		"/v1/cs2/matches/" + other.ID.String(), "/v1/cs2/teams", "/v1/cs2/players", "/v1/cs2/rankings",
		"/v1/cs2/odds", "/v1/cs2/odds?match=" + other.ID.String(), "/v1/cs2/tournaments",
	}
	for _, p := range denied {
		if r := ms.get(t, p, key); r.status != 403 || r.code(t) != "sandbox_scope" {
			t.Errorf("sandbox %s: %d %s", p, r.status, r.body)
		}
	}
	after := used()
	b, _ := strconv.Atoi(before)
	a, _ := strconv.Atoi(after)
	if b-a != 1 { // only the second coverage call counted
		t.Errorf("out-of-scope requests were counted: remaining %s -> %s", before, after)
	}
}

func TestSandboxQuotaHasNoRetryAfter(t *testing.T) {
	ms := planServer(t, access.PlanSandbox, access.PlanLimits{Burst: 20, Rate: 5, LifetimeQuota: 2})
	key := newTestKey(t, ms.keys, access.PlanSandbox)
	// Outside the sample: 403 and not counted, while allowance remains.
	if r := ms.get(t, "/v1/cs2/teams", key); r.status != 403 || r.code(t) != "sandbox_scope" {
		t.Fatalf("out of sample with allowance left: %d %s", r.status, r.body)
	}
	ms.get(t, "/v1/cs2/coverage", key)
	ms.get(t, "/v1/cs2/coverage", key)
	r := ms.get(t, "/v1/cs2/coverage", key)
	if r.status != 429 || r.code(t) != "sandbox_quota_exceeded" || r.header.Get("Retry-After") != "" {
		t.Fatalf("sandbox quota: %d %s %v", r.status, r.body, r.header.Get("Retry-After"))
	}
	// Once the allowance is used up, a request outside the sample gets the
	// same 429 ("inside the sample or not"), not 403.
	r = ms.get(t, "/v1/cs2/teams", key)
	if r.status != 429 || r.code(t) != "sandbox_quota_exceeded" || r.header.Get("X-Quota-Remaining") != "0" ||
		r.header.Get("X-Quota-Reset") != access.NeverResets {
		t.Fatalf("out of sample, allowance used up: %d %s %v", r.status, r.body, r.header)
	}
}

func TestCORS(t *testing.T) {
	ms := meteredOn(t, openEmbedded(t), nil)
	req := httptest.NewRequest(http.MethodOptions, "/v1/cs2/matches", nil)
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("Access-Control-Request-Method", "GET")
	req.Header.Set("Access-Control-Request-Headers", "Authorization")
	resp, err := ms.App().Test(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 300 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Fatalf("preflight without a key: %d %v", resp.StatusCode, resp.Header)
	}
	req = httptest.NewRequest(http.MethodGet, "/health", nil)
	req.Header.Set("Origin", "https://app.example.com")
	resp, _ = ms.App().Test(req)
	exposed := resp.Header.Get("Access-Control-Expose-Headers")
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy",
		"RateLimit", "X-Quota-Limit", "X-Quota-Remaining", "X-Quota-Reset", "Retry-After"} {
		if !strings.Contains(exposed, h) {
			t.Errorf("Access-Control-Expose-Headers lacks %s: %q", h, exposed)
		}
	}
	req = httptest.NewRequest(http.MethodGet, "/health", nil)
	req.Header.Set("Origin", "https://evil.example.com")
	resp, _ = ms.App().Test(req)
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("an origin outside the set was allowed")
	}
}

func TestKeysNeverLogged(t *testing.T) {
	ctr := &failingCounters{Counters: openEmbedded(t)}
	ms := meteredOn(t, ctr, nil)
	acct, _ := ms.keys.CreateAccount("acme", 0)
	key, k, _ := ms.keys.CreateKey(acct.ID, access.PlanStandard)
	ms.get(t, "/v1/cs2/matches?limit=1", key)
	ms.get(t, "/v1/cs2/matches?limit=1&apiKey="+key, "-")
	ctr.fail = true // the usage write fails: the error is logged with the key's display form
	ms.get(t, "/v1/cs2/matches?limit=1", key)
	ms.get(t, "/v1/cs2/matches?limit=1", "eo_live_"+strings.Repeat("ab", 24))
	logs := ms.logs.String()
	if !strings.Contains(logs, k.Display()) {
		t.Fatalf("the failure should be logged with the key's display form; logs:\n%s", logs)
	}
	if strings.Contains(logs, key) || strings.Contains(logs, key[8:]) || strings.Contains(logs, strings.Repeat("ab", 24)) {
		t.Fatalf("a key appears in the logs:\n%s", logs)
	}
}

type failingCounters struct {
	access.Counters
	fail bool
}

func (f *failingCounters) Record(ctx context.Context, ev access.UsageEvent) error {
	if f.fail {
		return context.DeadlineExceeded
	}
	return f.Counters.Record(ctx, ev)
}

// TestUsageEventsKeepTheirRequestIDs: each usage event carries the id its
// response was sent with, with either backend. The edge pools request
// states and the id's memory with them, so a backend that kept the id
// without copying it would record a later request's id (Redis buffers
// events before writing them).
func TestUsageEventsKeepTheirRequestIDs(t *testing.T) {
	url := redistest.Start(t)
	for _, backend := range []string{"embedded", "redis"} {
		t.Run(backend, func(t *testing.T) {
			var ms *meteredServer
			if backend == "redis" {
				clk := &fakeClock{t: fixtureNow}
				ms = newMeteredServer(t, openRedisCounters(t, url), openTestKeys(t, clk), nil, clk)
			} else {
				ms, _ = embeddedMeteredServer(t)
			}
			key := newTestKey(t, ms.keys, access.PlanInternal)
			sent := map[string]bool{}
			for range 60 {
				r := ms.get(t, "/v1/cs2/coverage", key)
				id := r.header.Get("X-Request-Id")
				if r.status != 200 || id == "" || sent[id] {
					t.Fatalf("%d, id %q (seen before: %v)", r.status, id, sent[id])
				}
				sent[id] = true
			}
			usageHasIDs(t, ms.ctr, sent)
		})
	}
}

// usageHasIDs: the usage log holds one event for each id of ids, and no
// other.
func usageHasIDs(t *testing.T, log access.UsageLog, ids map[string]bool) {
	t.Helper()
	evs, _, err := log.ReadUsage(context.Background(), "", 10*len(ids)+10)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, ev := range evs {
		got[ev.RequestID] = true
	}
	if len(evs) != len(ids) || len(got) != len(ids) {
		t.Fatalf("%d usage events with %d distinct ids for %d responses", len(evs), len(got), len(ids))
	}
	for id := range ids {
		if !got[id] {
			t.Errorf("no usage event has the id %s", id)
		}
	}
}

// TestTwoInstancesShareRedis: two edge instances on one Redis enforce one
// account quota and one key bucket between them.
func TestTwoInstancesShareRedis(t *testing.T) {
	url := redistest.Start(t)
	clk := &fakeClock{t: fixtureNow}
	keys := openTestKeys(t, clk)
	plans := access.DefaultPlans()
	plans[access.PlanStandard] = access.PlanLimits{Burst: 6, Rate: 0.001, MonthlyQuota: 10}
	a := newMeteredServer(t, openRedisCounters(t, url), keys, plans, clk)
	b := newMeteredServer(t, openRedisCounters(t, url), keys, plans, clk)
	acct, _ := keys.CreateAccount("acme", 0)
	k1, _, _ := keys.CreateKey(acct.ID, access.PlanStandard)
	k2, _, _ := keys.CreateKey(acct.ID, access.PlanStandard)
	// One key's bucket (6) holds across both instances.
	ok := 0
	for i := 0; i < 8; i++ {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		if srv.get(t, "/v1/cs2/coverage", k1).status == 200 {
			ok++
		}
	}
	if ok != 6 {
		t.Fatalf("bucket across instances admitted %d, want 6", ok)
	}
	// The account quota (10) holds across both instances and both keys: 6
	// used by k1, 4 more for k2.
	ok = 0
	for i := 0; i < 6; i++ {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		r := srv.get(t, "/v1/cs2/coverage", k2)
		if r.status == 200 {
			ok++
		} else if r.code(t) != "quota_exceeded" {
			t.Fatalf("unexpected %d %s", r.status, r.body)
		}
	}
	if ok != 4 {
		t.Fatalf("quota across instances admitted %d more, want 4", ok)
	}
}

package edge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/cursor"
	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/jobs"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/snapshot"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/synth"
	"github.com/eodata/eo/view"
)

// The fixture: a small synthetic world run through the real pipeline and
// published to a local store, built once per test binary.
var (
	fixtureNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	fixture    = worldtest.Shared[publish.Manifest]{World: synth.Options{Seed: 7, Now: fixtureNow, Matches: 160},
		Prefix: "eo-edge-fixture-"}
)

func TestMain(m *testing.M) {
	code := m.Run()
	fixture.Remove()
	os.Exit(code)
}

func publishOnce(ctx context.Context, st store.Store, work string) (publish.Manifest, error) {
	r := jobs.NewRunner(jobs.Options{Pipeline: pipelines.Options{Store: st, WorkDir: work, Logger: quietLog}, Force: true})
	res, err := r.RunOnce(ctx)
	return res.Manifest, err
}

// fixtureStore returns a copy of the fixture store (tests may publish into it).
func fixtureStore(t testing.TB) *store.Local {
	t.Helper()
	fixtureDir, _ := fixture.Get(t, func(ctx context.Context, st *store.Local, dir string) (publish.Manifest, error) {
		return publishOnce(ctx, st, filepath.Join(dir, "work"))
	})
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(fixtureDir, "store"))); err != nil {
		t.Fatal(err)
	}
	st, err := store.NewLocal(dst)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// testAuth accepts the keys it knows.
type testAuth struct {
	mu   sync.Mutex
	keys map[string]access.Principal
}

const (
	goodKey    = "eo_live_000000000000000000000000000000000000000000000001"
	opsKey     = "eo_live_000000000000000000000000000000000000000000000003" // the internal plan's
	revokedKey = "eo_live_000000000000000000000000000000000000000000000002"
	panicKey   = "eo_live_00000000000000000000000000000000000000000000dead"
)

func (a *testAuth) Authenticate(_ context.Context, key string) (access.Principal, error) {
	if key == panicKey {
		panic("test panic")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.keys[key]; ok {
		return p, nil
	}
	return access.Principal{}, access.ErrInvalidKey
}

type testServer struct {
	*Server
	store *store.Local
	now   time.Time
}

func newTestServer(t testing.TB) *testServer {
	t.Helper()
	return testServerOf(t, fixtureStore(t), nil)
}

// loadedTestServer builds an unmetered edge on st with auth and loads its
// snapshot; now is the clock (nil: the testServer's settable now).
func loadedTestServer(t testing.TB, st *store.Local, auth Authenticator, now func() time.Time) *testServer {
	t.Helper()
	return testServerOf(t, st, func(o *Options) {
		o.Auth = auth
		if now != nil {
			o.Now = now
		}
	})
}

// testServerOf builds an unmetered edge on st (where the test publishes)
// with the test keys and the testServer's settable clock, options changes
// what else it needs, and loads its snapshot.
func testServerOf(t testing.TB, st *store.Local, options func(*Options)) *testServer {
	t.Helper()
	ts := &testServer{store: st, now: fixtureNow}
	o := Options{Snapshots: snapshot.Options{Store: st, CacheDir: t.TempDir()}, Auth: &testAuth{keys: map[string]access.Principal{
		goodKey: {KeyID: "k1", AccountID: "a1", Plan: "standard", Display: "eo_live_…0001"},
		opsKey:  {KeyID: "k3", AccountID: "a3", Plan: access.PlanInternal, Display: "eo_live_…0003"},
	}}, CursorSecret: []byte("test-secret"), Now: func() time.Time { return ts.now }, Logger: quietLog}
	if options != nil {
		options(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts.Server = srv
	return ts
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func (r result) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

func (r result) data(t testing.TB) []any {
	t.Helper()
	d, ok := r.json(t)["data"].([]any)
	if !ok {
		t.Fatalf("data is not an array: %s", r.body)
	}
	return d
}

func (r result) code(t testing.TB) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// get sends a request through the app with the good key (unless the path
// already carries auth or key is "-") and checks the response against the
// OpenAPI contract and the universal rules (X-Request-Id, error envelope).
func (ts *testServer) get(t testing.TB, path string, key ...string) result {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	k := goodKey
	if len(key) > 0 {
		k = key[0]
	}
	if k != "-" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	return ts.do(t, req)
}

func (ts *testServer) do(t testing.TB, req *http.Request) result {
	t.Helper()
	resp, err := ts.App().Test(req, 10000)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := result{status: resp.StatusCode, header: resp.Header, body: body}
	rid := resp.Header.Get("X-Request-Id")
	if rid == "" {
		t.Errorf("%s: no X-Request-Id", req.URL)
	}
	if resp.StatusCode >= 300 {
		var env errorBody
		if err := json.Unmarshal(body, &env); err != nil || env.Error.Code == "" || env.Error.Message == "" {
			t.Errorf("%s: status %d without the error envelope: %s", req.URL, resp.StatusCode, body)
		}
		if env.Error.RequestID != rid {
			t.Errorf("%s: body request_id %q != X-Request-Id %q", req.URL, env.Error.RequestID, rid)
		}
	}
	checkContract(t, req, resp, body)
	return r
}

func (ts *testServer) snap() *Snapshot { return ts.Current() }

// publishNext publishes files to the server's store as a snapshot created a
// minute from now, of the serving snapshot's schema and pipeline versions,
// and returns its manifest.
// readyCheck is /ready's check of that name.
func readyCheck(t *testing.T, srv *Server, name string) Check {
	t.Helper()
	resp, err := srv.App().Test(httptest.NewRequest(http.MethodGet, "/ready", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h readyBody
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("/ready: %d %v", resp.StatusCode, err)
	}
	c, ok := h.Checks[name]
	if !ok {
		t.Fatalf("/ready has no %s check: %+v", name, h)
	}
	return c
}

// servedFiles are the table files of the snapshot being served, to
// publish again under a new id.
func servedFiles(t *testing.T, ts *testServer) []publish.TableFile {
	t.Helper()
	m := ts.Current().Meta
	var files []publish.TableFile
	for _, name := range m.Tables {
		files = append(files, publish.TableFile{Name: name, Path: filepath.Join(m.Dir, m.File(name)), Internal: m.Internal(name)})
	}
	return files
}

// cachedDir is the folder of snapshot id in the edge's cache.
func (ts *testServer) cachedDir(id string) string {
	return filepath.Join(ts.o.Snapshots.CacheDir, "snapshots", id)
}

func (ts *testServer) publishNext(t testing.TB, files []publish.TableFile) publish.Manifest {
	t.Helper()
	m := ts.Current().Meta
	man, err := publish.Publish(context.Background(), ts.store, publish.Manifest{
		CreatedAt: time.Now().Add(time.Minute), SchemaVersion: m.SchemaVersion, PipelineVersion: m.PipelineVersion,
	}, files)
	if err != nil {
		t.Fatal(err)
	}
	return man
}

// /health is the spec's liveness probe: exactly {"status":"ok"}, no key,
// no envelope, no checks, even before a snapshot is loaded. The
// dependency checks are /ready's: 503 until a snapshot is served, then
// 200 naming each check.
func TestHealthIsBareAndReadyCarriesTheChecks(t *testing.T) {
	cold := newOAPIServer(t) // nothing loaded
	for path, want := range map[string]struct {
		status int
		code   string
	}{"/health": {200, ""}, "/ready": {503, "unavailable"}} {
		resp, err := cold.App().Test(httptest.NewRequest(http.MethodGet, path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want.status {
			t.Errorf("%s before a snapshot: %d %s, want %d", path, resp.StatusCode, b, want.status)
		}
		if path == "/health" && string(b) != `{"status":"ok"}` {
			t.Errorf("/health before a snapshot: %s", b)
		}
		if path == "/ready" && (!strings.Contains(string(b), `"code":"unavailable"`) || !strings.Contains(string(b), `"snapshot":{"ok":false`)) {
			t.Errorf("/ready before a snapshot does not name the snapshot check: %s", b)
		}
	}

	ts := newTestServer(t)
	if r := ts.get(t, "/health", "-"); r.status != 200 || string(r.body) != `{"status":"ok"}` ||
		!strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("health: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	r := ts.get(t, "/ready", "-")
	var h readyBody
	if r.status != 200 || json.Unmarshal(r.body, &h) != nil || h.Status != "ok" || len(h.Checks) != 2 ||
		!h.Checks["snapshot"].OK || !h.Checks["snapshot"].Required || !h.Checks["store"].OK || h.Checks["store"].Required {
		t.Fatalf("ready: %d %s", r.status, r.body)
	}
}

func TestAuth(t *testing.T) {
	ts := newTestServer(t)
	if r := ts.get(t, "/v1/cs2/matches", "-"); r.status != 401 || r.code(t) != "missing_api_key" {
		t.Errorf("no key: %d %s", r.status, r.body)
	}
	unknown := ts.get(t, "/v1/cs2/matches", "eo_live_ffffffffffffffffffffffffffffffffffffffffffffffff")
	revoked := ts.get(t, "/v1/cs2/matches", revokedKey)
	if unknown.status != 401 || revoked.status != 401 {
		t.Fatalf("unknown %d, revoked %d", unknown.status, revoked.status)
	}
	strip := func(r result) string {
		m := r.json(t)
		delete(m["error"].(map[string]any), "request_id")
		b, _ := json.Marshal(m)
		return string(b)
	}
	if strip(unknown) != strip(revoked) {
		t.Errorf("unknown and revoked bodies differ:\n%s\n%s", unknown.body, revoked.body)
	}
	// apiKey query fallback, and the header wins over it.
	if r := ts.get(t, "/v1/cs2/matches?limit=1&apiKey="+goodKey, "-"); r.status != 200 {
		t.Errorf("apiKey fallback: %d %s", r.status, r.body)
	}
	if r := ts.get(t, "/v1/cs2/matches?limit=1&apiKey="+goodKey, revokedKey); r.status != 401 {
		t.Errorf("header must win over apiKey: %d", r.status)
	}
	if r := ts.get(t, "/v1/cs2/matches?limit=1&apiKey="+revokedKey); r.status != 200 {
		t.Errorf("header must win over apiKey: %d", r.status)
	}
	// A key without the Bearer scheme (or another scheme) is refused with
	// the fix in the message; a good key in the right form still passes.
	for _, h := range []string{goodKey, "Basic " + goodKey, "Bearer"} {
		req := httptest.NewRequest(http.MethodGet, "/v1/cs2/matches?limit=1", nil)
		req.Header.Set("Authorization", h)
		r := ts.do(t, req)
		var env errorBody
		_ = json.Unmarshal(r.body, &env)
		if r.status != 401 || env.Error.Code != "invalid_api_key" || !strings.Contains(env.Error.Message, "Bearer <API_KEY>") {
			t.Errorf("Authorization %q: %d %s, want 401 invalid_api_key naming the Bearer form", h, r.status, r.body)
		}
	}
}

// Two Authorization headers, or two apiKey parameters, are a 400 whatever
// the keys: the first used to win, and a proxy in front of the edge that
// reads the last one authorised (and metered) another key than the edge.
func TestRepeatedCredentialsAreRefused(t *testing.T) {
	ts := newTestServer(t)
	for _, c := range []struct {
		name, path string
		headers    []string
	}{
		{"two headers, one good", "/v1/cs2/matches?limit=1", []string{"Bearer " + goodKey, "Bearer " + revokedKey}},
		{"two headers, same key", "/v1/cs2/matches?limit=1", []string{"Bearer " + goodKey, "Bearer " + goodKey}},
		{"two headers on /metrics", "/metrics", []string{"Bearer " + goodKey, "Bearer " + goodKey}},
		{"two apiKey", "/v1/cs2/matches?limit=1&apiKey=" + goodKey + "&apiKey=" + revokedKey, nil},
		{"two apiKey, same key", "/v1/cs2/teams?apiKey=" + goodKey + "&apiKey=" + goodKey, nil},
		{"two apiKey beside a header", "/v1/cs2/teams?apiKey=" + goodKey + "&apiKey=" + goodKey, []string{"Bearer " + goodKey}},
	} {
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		for _, h := range c.headers {
			req.Header.Add("Authorization", h)
		}
		r := ts.do(t, req)
		if r.status != 400 || r.code(t) != "invalid_parameter" || !strings.Contains(string(r.body), "more than once") {
			t.Errorf("%s: %d %s, want 400 invalid_parameter", c.name, r.status, r.body)
		}
	}
	// One of each still works, the header winning.
	req := httptest.NewRequest(http.MethodGet, "/v1/cs2/matches?limit=1&apiKey="+revokedKey, nil)
	req.Header.Set("Authorization", "Bearer "+goodKey)
	if r := ts.do(t, req); r.status != 200 {
		t.Errorf("one header and one apiKey: %d %s", r.status, r.body)
	}
}

func TestPanicGivesInternalErrorEnvelope(t *testing.T) {
	ts := newTestServer(t)
	r := ts.get(t, "/v1/cs2/matches", panicKey)
	if r.status != 500 || r.code(t) != "internal_error" {
		t.Fatalf("panic: %d %s", r.status, r.body)
	}
}

func TestUnknownGameAndRoute(t *testing.T) {
	ts := newTestServer(t)
	if r := ts.get(t, "/v1/dota2/matches"); r.status != 404 || r.code(t) != "unknown_game" {
		t.Errorf("unknown game: %d %s", r.status, r.body)
	}
	if r := ts.get(t, "/v1/cs2/nothing-here"); r.status != 404 || r.code(t) != "not_found" {
		t.Errorf("unknown route: %d %s", r.status, r.body)
	}
}

func anyMatch(t testing.TB, s *Snapshot, keep func(*Match) bool) *Match {
	t.Helper()
	for i := range s.Matches() {
		if keep(&s.Matches()[i]) {
			return &s.Matches()[i]
		}
	}
	t.Fatal("fixture has no such match")
	return nil
}

func TestIDHandling(t *testing.T) {
	ts := newTestServer(t)
	unknown := "0190aaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee" // well-formed (v4), matches nothing
	team := ts.snap().Teams()[0]
	cases := []struct {
		path   string
		status int
		code   string
		empty  bool
	}{
		{"/v1/cs2/matches/not-a-uuid", 404, "not_found", false},
		{"/v1/cs2/matches/" + strings.ToUpper(unknown), 404, "not_found", false},
		{"/v1/cs2/matches/" + unknown, 404, "not_found", false},
		{"/v1/cs2/matches/" + unknown + "/maps", 200, "", true},
		{"/v1/cs2/matches/" + unknown + "/stats", 200, "", true},
		{"/v1/cs2/matches/" + unknown + "/vetoes", 200, "", true},
		{"/v1/cs2/matches/" + unknown + "/rounds", 200, "", true},
		{"/v1/cs2/matches/not-a-uuid/maps", 404, "not_found", false},
		{"/v1/cs2/tournaments/" + unknown + "/teams", 200, "", true},
		{"/v1/cs2/players/" + unknown + "/stats", 404, "not_found", false},
		{"/v1/cs2/players/" + unknown, 404, "not_found", false},
		{"/v1/cs2/teams/Not_A_Slug", 404, "not_found", false},
		{"/v1/cs2/teams/" + team.Slug, 200, "", false},
		{"/v1/cs2/teams/" + team.ID.String(), 200, "", false},
		{"/v1/cs2/matches?team=xyz", 400, "invalid_parameter", false},
		{"/v1/cs2/matches?tournament=" + strings.ToUpper(unknown), 400, "invalid_parameter", false},
		{"/v1/cs2/matches?team=" + unknown, 200, "", true},
		{"/v1/cs2/odds?match=nope", 400, "invalid_parameter", false},
		{"/v1/cs2/players?team=nope", 400, "invalid_parameter", false},
		{"/v1/cs2/teams/" + team.Slug + "/head-to-head?opponent=NOPE!", 400, "invalid_parameter", false},
		{"/v1/cs2/teams/" + team.Slug + "/head-to-head?opponent=" + team.ID.String(), 400, "invalid_parameter", false},
	}
	for _, c := range cases {
		r := ts.get(t, c.path)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.path, r.status, c.status, r.body)
			continue
		}
		if c.code != "" && r.code(t) != c.code {
			t.Errorf("%s: code %s, want %s", c.path, r.code(t), c.code)
		}
		if c.empty {
			if d := r.data(t); len(d) != 0 || !strings.Contains(string(r.body), `"data":[]`) {
				t.Errorf("%s: want data [], got %s", c.path, r.body)
			}
		}
	}
	// A team's JSON is the same by id and by slug.
	a := ts.get(t, "/v1/cs2/teams/"+team.Slug)
	b := ts.get(t, "/v1/cs2/teams/"+team.ID.String())
	if string(a.body) != string(b.body) {
		t.Error("team by slug and by id differ")
	}
}

func TestEnvelopes(t *testing.T) {
	ts := newTestServer(t)
	m := anyMatch(t, ts.snap(), func(m *Match) bool { return m.HasDepth })
	list := ts.get(t, "/v1/cs2/matches?limit=3").json(t)
	meta, ok := list["meta"].(map[string]any)
	if !ok || meta["count"].(float64) != 3 || meta["next_cursor"] == nil {
		t.Errorf("list meta: %v", list["meta"])
	}
	single := ts.get(t, "/v1/cs2/matches/"+m.ID.String()).json(t)
	if _, has := single["meta"]; has {
		t.Error("single resource must not carry meta")
	}
	depth := ts.get(t, "/v1/cs2/matches/"+m.ID.String()+"/depth").json(t)
	d := depth["data"].(map[string]any)
	for _, k := range []string{"weapons", "grenades", "hitgroups", "duels", "flashes"} {
		if _, ok := d[k].([]any); !ok {
			t.Errorf("depth.%s is not an array: %v", k, d[k])
		}
	}
	// A match without depth still gets five empty arrays, never null.
	none := anyMatch(t, ts.snap(), func(m *Match) bool { return !m.HasDepth })
	r := ts.get(t, "/v1/cs2/matches/"+none.ID.String()+"/depth")
	if !strings.Contains(string(r.body), `"weapons":[]`) || strings.Contains(string(r.body), "null") {
		t.Errorf("empty depth: %s", r.body)
	}
	// Sub-resources are unpaginated lists.
	sub := ts.get(t, "/v1/cs2/matches/"+m.ID.String()+"/rounds").json(t)
	if sub["meta"].(map[string]any)["next_cursor"] != nil {
		t.Error("sub-resources are not paginated")
	}
}

func TestDataAvailableMatchesSubResources(t *testing.T) {
	ts := newTestServer(t)
	for i, m := range ts.snap().Matches() {
		if i%7 != 0 {
			continue
		}
		flags := map[string]bool{"maps": m.HasMaps, "stats": m.HasStats, "vetoes": m.HasVetoes, "rounds": m.HasRounds}
		for sub, want := range flags {
			got := len(ts.get(t, "/v1/cs2/matches/"+m.ID.String()+"/"+sub).data(t)) > 0
			if got != want {
				t.Errorf("match %s: data_available.%s=%v but /%s has rows=%v", m.ID, sub, want, sub, got)
			}
		}
		depth := ts.get(t, "/v1/cs2/matches/"+m.ID.String()+"/depth")
		got := strings.Contains(string(depth.body), `match_id`)
		if got != m.HasDepth {
			t.Errorf("match %s: data_available.depth=%v but depth rows=%v", m.ID, m.HasDepth, got)
		}
		if m.Status == "scheduled" && (m.HasMaps || m.HasStats || m.HasRounds || m.HasDepth || m.HasVetoes) {
			t.Errorf("scheduled match %s has result data flags", m.ID)
		}
	}
}

func TestLimit(t *testing.T) {
	ts := newTestServer(t)
	for _, c := range []struct {
		q    string
		want int
	}{{"", 50}, {"limit=0", 50}, {"limit=-3", 50}, {"limit=abc", 50}, {"limit=5", 5}, {"limit=100000", 160}} {
		r := ts.get(t, "/v1/cs2/matches?"+c.q)
		if r.status != 200 {
			t.Fatalf("%s: %d", c.q, r.status)
		}
		if n := len(r.data(t)); n != c.want && !(c.want == 160 && n == routeLimits["/matches"].max) {
			t.Errorf("matches?%s: %d rows, want %d", c.q, n, c.want)
		}
	}
	if n := len(ts.get(t, "/v1/cs2/teams?limit=100000").data(t)); n != len(ts.snap().Teams()) || n > routeLimits["/teams"].max {
		t.Errorf("teams clamp: %d", n)
	}
}

// pageAll walks every page of a list and returns the ids in order.
func pageAll(t testing.TB, ts *testServer, path string) []string {
	return pageFrom(t, ts, path, "")
}

// pageFrom walks the pages of a list starting at a cursor ("" = first page)
// and returns the rows' ids.
func pageFrom(t testing.TB, ts *testServer, path, next string) []string {
	t.Helper()
	var ids []string
	for _, row := range pageRowsFrom(t, ts, path, next) {
		ids = append(ids, row["id"].(string))
	}
	return ids
}

var limitParam = regexp.MustCompile(`limit=[0-9]+`)

func TestCursorPaging(t *testing.T) {
	ts := newTestServer(t)
	for _, path := range []string{"/v1/cs2/matches?limit=7", "/v1/cs2/teams?limit=4", "/v1/cs2/teams?limit=4&sort=-external_rank",
		"/v1/cs2/players?limit=13&sort=role", "/v1/cs2/tournaments?limit=3", "/v1/cs2/matches?limit=5&status=completed"} {
		ids := pageAll(t, ts, path)
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Errorf("%s: row %s seen twice", path, id)
			}
			seen[id] = true
		}
		// The paged walk equals the one-page answer.
		whole := ts.get(t, limitParam.ReplaceAllString(path, "limit=1000"))
		if n := len(whole.data(t)); n != len(ids) && n != 200 {
			t.Errorf("%s: paged %d rows, whole list %d", path, len(ids), n)
		}
	}
}

func TestCursorRejections(t *testing.T) {
	ts := newTestServer(t)
	r := ts.get(t, "/v1/cs2/teams?limit=2&sort=name")
	cur := r.json(t)["meta"].(map[string]any)["next_cursor"].(string)
	tampered := []byte(cur)
	tampered[3] ^= 1
	for _, p := range []string{
		"/v1/cs2/teams?limit=2&sort=name&cursor=" + string(tampered),
		"/v1/cs2/teams?limit=2&sort=-name&cursor=" + cur, // another sort
		"/v1/cs2/players?limit=2&cursor=" + cur,          // another endpoint
		"/v1/cs2/matches?cursor=garbage",
	} {
		if r := ts.get(t, p); r.status != 400 || r.code(t) != "invalid_cursor" {
			t.Errorf("%s: %d %s", p, r.status, r.body)
		}
	}
	if r := ts.get(t, "/v1/cs2/teams?limit=2&sort=name&cursor="+cur); r.status != 200 {
		t.Errorf("valid cursor refused: %s", r.body)
	}
	// A cursor minted without a sort (before sort support) pages the default order.
	legacy := ts.cursors.Encode(cursor.List{Kind: "teams", Val: view.SortVal{}, ID: ID{}})
	if r := ts.get(t, "/v1/cs2/teams?limit=2&cursor="+legacy); r.status != 200 {
		t.Errorf("legacy cursor: %d %s", r.status, r.body)
	}
}

func TestSortValidation(t *testing.T) {
	ts := newTestServer(t)
	for _, p := range []string{"/v1/cs2/teams?sort=bogus", "/v1/cs2/players?sort=-bogus", "/v1/cs2/rankings?sort=nope"} {
		r := ts.get(t, p)
		if r.status != 400 || r.code(t) != "invalid_parameter" {
			t.Errorf("%s: %d", p, r.status)
			continue
		}
		msg := r.json(t)["error"].(map[string]any)["message"].(string)
		if !strings.Contains(msg, "accepted keys") || !strings.Contains(msg, "name") && !strings.Contains(msg, "rank") {
			t.Errorf("%s: message must list accepted keys: %s", p, msg)
		}
	}
	names := []string{}
	for _, row := range ts.get(t, "/v1/cs2/teams?limit=200&sort=-name").data(t) {
		names = append(names, strings.ToLower(row.(map[string]any)["name"].(string)))
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] < names[i] {
			t.Fatalf("sort=-name not descending at %d: %q < %q", i, names[i-1], names[i])
		}
	}
}

func TestMatchFilters(t *testing.T) {
	ts := newTestServer(t)
	s := ts.snap()
	// status filter is exact and case-sensitive: Completed is not a status.
	for _, bad := range []string{"date_from=2025-13-01", "date_to=yesterday", "has=maps,odds", "has=MAPS", "status=Completed"} {
		if r := ts.get(t, "/v1/cs2/matches?"+bad); r.status != 400 || r.code(t) != "invalid_parameter" {
			t.Errorf("%s: %d", bad, r.status)
		}
	}
	for _, row := range ts.get(t, "/v1/cs2/matches?status=completed&has=maps,rounds&limit=200").data(t) {
		m := row.(map[string]any)
		da := m["data_available"].(map[string]any)
		if m["status"] != "completed" || da["maps"] != true || da["rounds"] != true {
			t.Fatalf("filter leak: %v", m)
		}
	}
	// Date bounds include the whole day at both ends.
	m := anyMatch(t, s, func(m *Match) bool { return m.Status == "completed" })
	day := m.ScheduledAt.Format("2006-01-02")
	rows := ts.get(t, "/v1/cs2/matches?limit=200&date_from="+day+"&date_to="+day).data(t)
	found := false
	for _, row := range rows {
		r := row.(map[string]any)
		if !strings.HasPrefix(r["scheduled_at"].(string), day) {
			t.Errorf("date filter leak: %v", r["scheduled_at"])
		}
		if r["id"] == m.ID.String() {
			found = true
		}
	}
	if !found {
		t.Errorf("match on %s missing from its own day", day)
	}
	// team filter: every row has the team.
	team := m.TeamAID.String()
	for _, row := range ts.get(t, "/v1/cs2/matches?limit=200&team="+team).data(t) {
		r := row.(map[string]any)
		if r["team_a_id"] != team && r["team_b_id"] != team {
			t.Fatalf("team filter leak: %v", r)
		}
	}
	// cancelled matches never appear among scheduled ones.
	for _, row := range ts.get(t, "/v1/cs2/matches?limit=200&status=scheduled").data(t) {
		if row.(map[string]any)["status"] != "scheduled" {
			t.Fatal("status filter leak")
		}
	}
}

func TestMatchDetailInclude(t *testing.T) {
	ts := newTestServer(t)
	m := anyMatch(t, ts.snap(), func(m *Match) bool { return m.HasMaps && m.HasStats && m.HasVetoes })
	bare := ts.get(t, "/v1/cs2/matches/"+m.ID.String()).json(t)["data"].(map[string]any)
	for _, k := range []string{"teams", "tournament", "team_a_name"} {
		if _, has := bare[k]; has {
			t.Errorf("bare detail carries %s", k)
		}
	}
	r := ts.get(t, "/v1/cs2/matches/"+m.ID.String()+"?include=teams,tournament,odds,maps,stats,vetoes,rounds,lineups")
	d := r.json(t)["data"].(map[string]any)
	teams := d["teams"].(map[string]any)
	if teams["team_a"].(map[string]any)["id"] != m.TeamAID.String() {
		t.Errorf("include=teams: %v", teams)
	}
	if d["tournament"].(map[string]any)["id"] != m.TournamentID.String() {
		t.Errorf("include=tournament: %v", d["tournament"])
	}
	if len(d["maps"].([]any)) == 0 || len(d["stats"].([]any)) == 0 || len(d["vetoes"].([]any)) == 0 {
		t.Errorf("include data missing: %s", r.body)
	}
	if _, ok := d["odds"].([]any); !ok {
		t.Errorf("include=odds must be an array: %v", d["odds"])
	}
	if r := ts.get(t, "/v1/cs2/matches/"+m.ID.String()+"?include=everything"); r.status != 400 {
		t.Errorf("unknown include: %d", r.status)
	}
}

func TestNullsAndTimestamps(t *testing.T) {
	ts := newTestServer(t)
	sched := anyMatch(t, ts.snap(), func(m *Match) bool { return m.Status == "scheduled" })
	d := ts.get(t, "/v1/cs2/matches/"+sched.ID.String()).json(t)["data"].(map[string]any)
	for _, k := range []string{"score_a", "score_b", "winner_team_id", "started_at", "ended_at", "live_state"} {
		v, present := d[k]
		if !present || v != nil {
			t.Errorf("scheduled match: %s must be present and null, got %v (present %v)", k, v, present)
		}
	}
	sa := d["scheduled_at"].(string)
	if !strings.HasSuffix(sa, "Z") || strings.Contains(sa, ".") {
		t.Errorf("scheduled_at %q: RFC 3339 UTC with Z, no sub-second", sa)
	}
	// Empty-string rule on players and teams: never null.
	for _, row := range ts.get(t, "/v1/cs2/players?limit=200").data(t) {
		p := row.(map[string]any)
		for _, k := range []string{"short_name", "real_name", "nationality"} {
			if _, ok := p[k].(string); !ok {
				t.Fatalf("player %s must be a string: %v", k, p[k])
			}
		}
	}
}

func TestPlayersIDsAndFilters(t *testing.T) {
	ts := newTestServer(t)
	s := ts.snap()
	ids := []string{s.Players()[0].ID.String(), s.Players()[3].ID.String()}
	r := ts.get(t, "/v1/cs2/players?ids="+strings.Join(ids, ","))
	if len(r.data(t)) != 2 {
		t.Errorf("ids filter: %s", r.body)
	}
	many := make([]string, 501)
	for i := range many {
		many[i] = s.Players()[0].ID.String()
	}
	for _, q := range []string{"ids=", "ids=" + strings.Join(many, ","), "ids=abc"} {
		if r := ts.get(t, "/v1/cs2/players?"+q); r.status != 400 || r.code(t) != "invalid_parameter" {
			t.Errorf("%s: %d", q[:min(len(q), 20)], r.status)
		}
	}
	if r := ts.get(t, "/v1/cs2/players?ids="+strings.Join(many[:500], ",")); r.status != 200 {
		t.Errorf("500 ids must be accepted: %d", r.status)
	}
	for _, row := range ts.get(t, "/v1/cs2/players?role=AWP&limit=200").data(t) {
		if row.(map[string]any)["role"] != "AWP" {
			t.Fatal("role filter leak")
		}
	}
	if r := ts.get(t, "/v1/cs2/players?role=awp"); r.status != 400 || r.code(t) != "invalid_parameter" {
		t.Errorf("filters are case-sensitive: role=awp gave %d %s", r.status, r.body)
	}
	st := ts.get(t, "/v1/cs2/players/"+s.Players()[0].Slug+"/stats")
	if st.status != 200 || st.json(t)["data"].(map[string]any)["player_id"] != s.Players()[0].ID.String() {
		t.Errorf("player stats: %s", st.body)
	}
}

func TestTournamentStatusDerivedAtRequestTime(t *testing.T) {
	ts := newTestServer(t)
	var tour *Tournament
	for i := range ts.snap().Tournaments() {
		x := &ts.snap().Tournaments()[i]
		if x.StartsAt != nil && x.EndsAt != nil && x.EndsAt.After(x.StartsAt.Add(24*time.Hour)) {
			tour = x
			break
		}
	}
	if tour == nil {
		t.Fatal("no dated tournament")
	}
	status := func() any {
		return ts.get(t, "/v1/cs2/tournaments/"+tour.Slug).json(t)["data"].(map[string]any)["status"]
	}
	ts.now = tour.StartsAt.Add(-time.Hour)
	if s := status(); s != "upcoming" {
		t.Errorf("before start: %v", s)
	}
	ts.now = tour.StartsAt.Add(time.Hour)
	if s := status(); s != "ongoing" {
		t.Errorf("during: %v", s)
	}
	ts.now = tour.EndsAt.Add(48 * time.Hour)
	if s := status(); s != "finished" {
		t.Errorf("after: %v", s)
	}
	// A tournament without starts_at has status null and no status filter returns it.
	for i := range ts.snap().Tournaments() {
		x := &ts.snap().Tournaments()[i]
		if x.StartsAt != nil {
			continue
		}
		d := ts.get(t, "/v1/cs2/tournaments/"+x.ID.String()).json(t)["data"].(map[string]any)
		if v, ok := d["status"]; !ok || v != nil {
			t.Errorf("undated tournament status: %v", v)
		}
		for _, st := range []string{"upcoming", "ongoing", "finished"} {
			for _, row := range ts.get(t, "/v1/cs2/tournaments?limit=200&status="+st).data(t) {
				if row.(map[string]any)["id"] == x.ID.String() {
					t.Errorf("undated tournament listed under status=%s", st)
				}
			}
		}
	}
	if r := ts.get(t, "/v1/cs2/tournaments?year=20x5"); r.status != 400 {
		t.Errorf("bad year: %d", r.status)
	}
}

func TestOddsRankingsMetricsValidation(t *testing.T) {
	ts := newTestServer(t)
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/v1/cs2/odds", 200}, {"/v1/cs2/odds?source=eo_model", 200}, {"/v1/cs2/odds?source=pinnacle", 400},
		{"/v1/cs2/rankings", 200}, {"/v1/cs2/rankings?type=player&role=AWP", 200}, {"/v1/cs2/rankings?type=coach", 400},
		{"/v1/cs2/model/metrics", 200}, {"/v1/cs2/coverage", 200},
	} {
		r := ts.get(t, c.path)
		if r.status != c.status {
			t.Errorf("%s: %d, want %d (%s)", c.path, r.status, c.status, r.body)
		}
		if c.status == 200 {
			if meta := r.json(t)["meta"].(map[string]any); meta["next_cursor"] != nil && c.path != "/v1/cs2/odds?match=" {
				t.Errorf("%s: not paginated, next_cursor must be null", c.path)
			}
		}
	}
	// eo_model is not served until its gate passes.
	if n := len(ts.get(t, "/v1/cs2/odds?source=eo_model").data(t)); n != 0 {
		t.Errorf("eo_model rows before the gate: %d", n)
	}
	cov := ts.get(t, "/v1/cs2/coverage").data(t)
	keys := map[string]bool{}
	for _, e := range cov {
		keys[e.(map[string]any)["key"].(string)] = true
	}
	if !keys["round_stats"] || !keys["player_depth"] {
		t.Errorf("coverage must declare round_stats and player_depth: %v", keys)
	}
}

func TestTeamProfileAndHeadToHead(t *testing.T) {
	ts := newTestServer(t)
	m := anyMatch(t, ts.snap(), func(m *Match) bool { return m.Status == "completed" && m.HasRounds })
	a := *ts.snap().Team(m.TeamAID)
	b := *ts.snap().Team(m.TeamBID)
	p := ts.get(t, "/v1/cs2/teams/"+a.Slug+"/profile").json(t)["data"].(map[string]any)
	for k, v := range p {
		if strings.HasSuffix(k, "_pct") && v != nil {
			if f := v.(float64); f < 0 || f > 100 {
				t.Errorf("%s = %v outside 0-100", k, f)
			}
		}
	}
	if p["matches_played"].(float64) < 1 {
		t.Errorf("profile: %v", p)
	}
	h := ts.get(t, "/v1/cs2/teams/"+a.ID.String()+"/head-to-head?opponent="+b.Slug).json(t)["data"].(map[string]any)
	if h["matches"].(float64) < 1 || h["wins"].(float64)+h["losses"].(float64) != h["matches"].(float64) {
		t.Errorf("h2h: %v", h)
	}
	if r := ts.get(t, "/v1/cs2/teams/"+a.Slug+"/head-to-head"); r.status != 400 {
		t.Errorf("h2h without opponent: %d", r.status)
	}
}

// TestSwapUnderLoad: requests keep succeeding while new snapshots are loaded
// and swapped in.
func TestSwapUnderLoad(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	var failures, total int64
	var mu sync.Mutex
	stop := proctest.Hammer(4, func(int) {
		req := httptest.NewRequest(http.MethodGet, "/v1/cs2/matches?limit=20", nil)
		req.Header.Set("Authorization", "Bearer "+goodKey)
		resp, err := ts.App().Test(req, 10000)
		mu.Lock()
		total++
		if err != nil || resp.StatusCode != 200 {
			failures++
		}
		mu.Unlock()
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	seen := map[string]bool{ts.Current().ID: true}
	for i := 0; i < 3; i++ {
		if _, err := publishOnce(ctx, ts.store, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		if err := ts.Load(ctx); err != nil {
			t.Fatal(err)
		}
		seen[ts.Current().ID] = true
	}
	stop()
	if len(seen) != 4 {
		t.Errorf("expected 4 distinct snapshots served, got %d", len(seen))
	}
	if failures != 0 || total == 0 {
		t.Fatalf("%d of %d requests failed during swaps", failures, total)
	}
}

// TestPagingAcrossSwap: a client that pages through while a new snapshot is
// swapped in between its pages sees every row once.
func TestPagingAcrossSwap(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	want := pageAll(t, ts, "/v1/cs2/matches?limit=200")
	r := ts.get(t, "/v1/cs2/matches?limit=9")
	var got []string
	for _, row := range r.data(t) {
		got = append(got, row.(map[string]any)["id"].(string))
	}
	next := r.json(t)["meta"].(map[string]any)["next_cursor"].(string)
	before := ts.Current().ID
	if _, err := publishOnce(ctx, ts.store, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := ts.Load(ctx); err != nil || ts.Current().ID == before {
		t.Fatalf("swap did not happen: %v", err)
	}
	got = append(got, pageFrom(t, ts, "/v1/cs2/matches?limit=9", next)...)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("paging across a swap: got %d rows, want %d (dups or gaps)", len(got), len(want))
	}
}

// TestCorruptSnapshotNeverServed: a new snapshot whose table does not match
// its checksum is refused and the last good one keeps serving.
func TestCorruptSnapshotNeverServed(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	good := ts.Current().ID
	m, err := publishOnce(ctx, ts.store, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := ts.store.LocalPath("snapshots/" + m.SnapshotID + "/matches.parquet")
	if err := os.WriteFile(path, []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The new snapshot's tables are the bytes of the one served, which the
	// edge would link from its cache; without the cache, matches.parquet is
	// downloaded, and what the store holds must not pass.
	if err := os.RemoveAll(ts.cachedDir(good)); err != nil {
		t.Fatal(err)
	}
	err = ts.Load(ctx)
	if !errors.Is(err, store.ErrChecksum) {
		t.Fatalf("corrupt snapshot load: %v", err)
	}
	if ts.Current().ID != good {
		t.Fatal("a corrupt snapshot was swapped in")
	}
	if r := ts.get(t, "/v1/cs2/matches?limit=1"); r.status != 200 {
		t.Fatalf("still serving: %d", r.status)
	}
}

// TestStoreUnreachableServesCache: with the store gone at start, the edge
// serves the snapshot cached on local disk.
func TestStoreUnreachableServesCache(t *testing.T) {
	ts := newTestServer(t)
	cache := ts.o.Snapshots.CacheDir
	id := ts.Current().ID
	gone, err := store.NewLocal(filepath.Join(t.TempDir(), "empty"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Snapshots: snapshot.Options{Store: gone, CacheDir: cache}, Auth: ts.o.Auth, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if c := readyCheck(t, srv, "store"); srv.Current() == nil || srv.Current().ID != id || c.Error == nil ||
		!strings.HasSuffix(*c.Error, "serving "+id+" from the local cache") {
		t.Fatalf("not serving the cached snapshot: /ready says %+v", c)
	}
	// With neither store nor cache, start fails.
	srv2, _ := New(Options{Snapshots: snapshot.Options{Store: gone, CacheDir: t.TempDir()}, Auth: ts.o.Auth, Logger: quietLog})
	if err := srv2.Start(ctx); err == nil {
		t.Fatal("start with no snapshot anywhere must fail")
	}
}

func TestMetricsEndpoint(t *testing.T) {
	ts := newTestServer(t)
	ts.get(t, "/v1/cs2/matches?limit=1")
	// An operator (internal-plan) key reads /metrics; no key is 401, a
	// customer's key 403.
	if r := ts.get(t, "/metrics", "-"); r.status != 401 {
		t.Fatalf("/metrics without a key: %d", r.status)
	}
	if r := ts.get(t, "/metrics"); r.status != 403 {
		t.Fatalf("/metrics with a standard key: %d", r.status)
	}
	body := operatorMetrics(t, ts)
	for _, s := range []string{"eo_http_requests_total", "eo_snapshot_info", "eo_snapshot_age_seconds", `route="/v1/:game/matches"`} {
		if !strings.Contains(body, s) {
			t.Errorf("/metrics lacks %s", s)
		}
	}
}

// TestLatencySampled: every request is counted, and one in latencySample,
// at random, has its latency observed (the histogram's count is a sample
// of the requests, as its help text says).
func TestLatencySampled(t *testing.T) {
	ts := newTestServer(t)
	const n = 1600
	for range n {
		if r := ts.get(t, "/v1/cs2/rankings?limit=1"); r.status != 200 {
			t.Fatalf("rankings: %d", r.status)
		}
	}
	body := operatorMetrics(t, ts)
	route := `route="/v1/:game/rankings"`
	if got, ok := proctest.MetricValue(body, `eo_http_requests_total{code="200",`+route+`}`); !ok || got != n {
		t.Fatalf("requests counted: %v (found %v), want %d", got, ok, n)
	}
	got, ok := proctest.MetricValue(body, `eo_http_request_duration_seconds_count{`+route+`}`)
	// A binomial count of mean n/8 = 200 and standard deviation 13:
	// the bounds are eight deviations out.
	if !ok || got < 95 || got > 305 {
		t.Fatalf("latencies observed: %v (found %v), want about %d of %d", got, ok, n/latencySample, n)
	}
}

var quietLog = slog.New(slog.DiscardHandler)

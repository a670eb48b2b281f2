package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	_ "github.com/marcboeker/go-duckdb/v2"
	"github.com/redis/go-redis/v9"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/miniotest"
	"github.com/eodata/eo/internal/testkit/redistest"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/store"
)

// clusterPlans are the plan limits of the cluster test: a trial allowance
// of 40 requests (the quota) and a standard bucket of 20 tokens that
// refills once in 1,000 s (the bucket), so exactness across the edges is
// countable; internal keys stay generous.
const clusterPlans = `{
  "trial":    {"burst": 1000000, "rate": 1000000, "trial_total": 40, "trial_per_endpoint": 1000, "ws_connections": 5},
  "standard": {"burst": 20, "rate": 0.001, "monthly_quota": 1000000, "ws_connections": 5},
  "internal": {"burst": 1000000, "rate": 1000000, "monthly_quota": 1000000000, "ws_connections": 100}
}`

// TestClusterBehavesAsOneService runs the deployed shape with real
// processes: MinIO, redis-server, `eo jobs` and two `eo serve` edges on
// their own ports and work folders, sharing the store and Redis. It checks
// that they behave as one service: a publish reaches both edges; quota
// and bucket are exact across them; a WebSocket ticket minted on one edge
// is redeemed on the other; a live event reaches the subscribers of both,
// and each edge's WebSocket update equals its REST answer; a key revoked
// with `eo keys` is refused by both within 2 s; with one edge killed (-9)
// the other serves and streams on; with MinIO restarted the edge keeps its
// snapshot and loads the next publish.
func TestClusterBehavesAsOneService(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO, redis-server, eo jobs and two edges")
	}
	c := startCluster(t)
	ptr := c.waitPointer(t, "")
	for _, e := range c.edges {
		waitFor(t, e, `msg="snapshot loaded" snapshot=`+ptr.SnapshotID)
	}

	t.Run("quota and bucket are exact across the edges", func(t *testing.T) {
		if ok, limited := c.spread(t, c.keys["trial"], 30); ok != 40 || limited != 20 {
			t.Fatalf("trial allowance of 40, 60 requests over two edges: %d served, %d refused (want 40, 20)", ok, limited)
		}
		if ok, limited := c.spread(t, c.keys["standard"], 15); ok != 20 || limited != 10 {
			t.Fatalf("bucket of 20, 30 requests over two edges: %d served, %d refused (want 20, 10)", ok, limited)
		}
	})

	t.Run("every table downloads through /exports and reads in DuckDB", func(t *testing.T) {
		c.downloadExports(t, c.edges[1], ptr.SnapshotID)
	})

	id, upstream := c.liveTarget(t, c.edges[0], ptr.SnapshotID)
	target := "match:" + id
	// A ticket minted on edge A opens a connection on edge B; edge A's own
	// subscriber uses a ticket of A.
	wsA := c.subscribe(t, c.edges[0], c.edges[0], target)
	wsB := c.subscribe(t, c.edges[0], c.edges[1], target)
	rc := redis.NewClient(&redis.Options{Addr: c.redis.Addr})
	defer rc.Close()
	feed := &live.RedisFeed{Client: rc}
	c.publishScore(t, feed, upstream, 7, 3)
	var lastA wsFrame
	for i, ws := range []*wsConn{wsA, wsB} {
		f := ws.expectUpdate(t, target, `"rounds_a":7`)
		if rest := c.matchData(t, c.edges[i], id); rest != string(f.Data) {
			t.Errorf("edge %d: the WebSocket update and REST disagree:\nws   %s\nrest %s", i, f.Data, rest)
		}
		if i == 0 {
			lastA = f
		}
	}

	t.Run("a client of edge A resumes on edge B with exactly the updates it missed", func(t *testing.T) {
		wsA.Close() // A's client drops mid-match
		var missed []string
		for b := 4; b <= 5; b++ {
			c.publishScore(t, feed, upstream, 7, b)
			missed = append(missed, wsB.expectUpdate(t, target, fmt.Sprintf(`"rounds_b":%d`, b)).raw)
		}
		ws := c.resume(t, c.edges[1], target, lastA.Seq)
		for i, want := range missed {
			if f := ws.read(t); f.raw != want {
				t.Fatalf("replayed frame %d of %d:\ngot  %s\nwant %s", i+1, len(missed), f.raw, want)
			}
		}
		ws.barrier(t, "odds:"+id) // and nothing else
		// Older than anything edge B holds: a snapshot to start over from.
		ws = c.resume(t, c.edges[1], target, 0)
		if f := ws.read(t); f.Type != "snapshot" || !f.Resync || f.Seq < lastA.Seq+2 ||
			string(f.Data) != c.matchData(t, c.edges[1], id) {
			t.Fatalf("resume from 0: %s", f.raw)
		}
	})

	t.Run("eo jobs lands the live events and publishes them in an incremental run", func(t *testing.T) {
		// The feed's events (rounds 7:3, then 7:5) are landed by eo jobs' lander;
		// the next run takes that batch alone, and edge B's REST answer
		// from the new snapshot is the one its live overlay gave.
		want := c.matchData(t, c.edges[1], id)
		m := c.waitManifest(t, func(m publish.Manifest) bool { return m.Extra["run_mode"] == pipelines.ModeIncremental })
		waitFor(t, c.edges[1], `msg="snapshot loaded" snapshot=`+m.SnapshotID)
		if got := c.matchData(t, c.edges[1], id); got != want || !strings.Contains(got, `"rounds_b":5`) {
			t.Fatalf("after the incremental snapshot %s:\ngot  %s\nwant %s", m.SnapshotID, got, want)
		}
		// The tables the run did not change are the bytes of the snapshot
		// before, which edge B holds: linked from its cache, not downloaded.
		line := regexp.MustCompile(`msg="snapshot loaded" snapshot=` + m.SnapshotID + `.* downloaded_bytes=(\d+) reused_bytes=(\d+)`).
			FindStringSubmatch(c.edges[1].out.String())
		if line == nil || line[2] == "0" {
			t.Fatalf("edge B fetched the incremental snapshot %s without reusing a cached table: %q", m.SnapshotID, line)
		}
		t.Logf("edge B, incremental snapshot: %s bytes downloaded, %s reused from its cache", line[1], line[2])
		ptr = publish.Pointer{SnapshotID: m.SnapshotID}
	})

	t.Run("a key revoked with eo keys is refused by every edge within 2 s", func(t *testing.T) {
		// Before the revocation: a WebSocket of the key open on each edge,
		// and a ticket of it not redeemed yet.
		var open []*wsConn
		for _, e := range c.edges {
			conn, _, err := websocket.DefaultDialer.Dial("ws://"+e.addr+c.ticket(t, e, c.keys["revocable"]), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			open = append(open, &wsConn{conn})
		}
		unredeemed := c.ticket(t, c.edges[0], c.keys["revocable"])
		if err := run(context.Background(), []string{"keys", "revoke", "--key", c.keyIDs["revocable"]}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Second)
		for i, ws := range open {
			// The open connections are told and closed (1008).
			_ = ws.SetReadDeadline(deadline.Add(time.Second)) // the edges check every second
			_, msg, err := ws.ReadMessage()
			if err != nil || !strings.Contains(string(msg), `"code":"invalid_api_key"`) {
				t.Fatalf("edge %s: the revoked key's WebSocket got %s %v, want an invalid_api_key frame", c.edges[i].addr, msg, err)
			}
			if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
				t.Fatalf("edge %s: after the frame: %v, want a close 1008", c.edges[i].addr, err)
			}
		}
		if _, resp, err := websocket.DefaultDialer.Dial("ws://"+c.edges[1].addr+unredeemed, nil); err == nil || resp == nil || resp.StatusCode != 401 {
			t.Fatalf("a ticket minted before the revocation opened a WebSocket: %v %v", resp, err)
		}
		for _, e := range c.edges {
			for {
				code, _ := e.get("/v1/cs2/teams?limit=1", c.keys["revocable"])
				if code == 401 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("edge %s still answers %d to a revoked key 2 s after eo keys revoke", e.addr, code)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})

	// kill -9 edge A: B serves and streams on.
	_ = c.edges[0].cmd.Process.Signal(syscall.SIGKILL)
	if code, body := c.edges[1].get("/v1/cs2/matches/"+id, c.keys["internal"]); code != 200 {
		t.Fatalf("edge B after edge A was killed: %d %s", code, body)
	}
	c.publishScore(t, feed, upstream, 8, 3)
	wsB.expectUpdate(t, target, `"rounds_a":8`)

	// MinIO restarted: B keeps its snapshot while the store is down, and
	// loads the next one `eo jobs` publishes once it is back.
	c.minio.Kill()
	waitFor(t, c.edges[1], "snapshot reload failed")
	if code, body := c.edges[1].get("/v1/cs2/matches?limit=1", c.keys["internal"]); code != 200 {
		t.Fatalf("edge B with MinIO down: %d %s", code, body)
	}
	if err := c.minio.Relaunch(); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"generate", "--store", c.store, "--work", t.TempDir(), "--matches", "61", "--now", "2026-06-02T12:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	next := c.waitPointer(t, ptr.SnapshotID)
	waitFor(t, c.edges[1], `msg="snapshot loaded" snapshot=`+next.SnapshotID)

	t.Run("an edge restarted while Redis is frozen starts, then serves when Redis answers", func(t *testing.T) {
		c.restartDuringRedisFreeze(t, feed)
	})
}

// restartDuringRedisFreeze freezes redis-server (SIGSTOP: connections hang),
// restarts edge B, and checks that it starts (keys from its cache, metering
// failing fast with 503, no feed), and that once Redis is resumed it serves
// metered requests and streams live events without another restart.
func (c *cluster) restartDuringRedisFreeze(t *testing.T, feed *live.RedisFeed) {
	b := c.edges[1]
	c.redis.Freeze()
	resumed := false
	defer func() {
		if !resumed {
			c.redis.Resume()
		}
	}()
	b.stop(t)
	nb := startEO(t, 0, c.env, "serve", "--store", c.store, "--work", b.work, "--addr", b.addr)
	nb.addr, nb.key, nb.work = b.addr, b.key, b.work
	c.edges[1] = nb
	waitFor(t, nb, "serving the keys cached by the last good read")
	waitFor(t, nb, "edge serving snapshot")
	if code, body := nb.get("/v1/cs2/teams?limit=1", c.keys["internal"]); code != 503 || !strings.Contains(string(body), `"unavailable"`) {
		t.Fatalf("a metered request with Redis frozen: %d %s", code, body)
	}
	c.redis.Resume()
	resumed = true
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := nb.get("/v1/cs2/teams?limit=1", c.keys["internal"])
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after Redis resumed the restarted edge still answers %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitFor(t, nb, "live feed subscribed")
	ptr, err := publish.ReadPointer(context.Background(), c.st)
	if err != nil {
		t.Fatal(err)
	}
	id, upstream := c.liveTarget(t, nb, ptr.SnapshotID)
	target := "match:" + id
	ws := c.subscribe(t, nb, nb, target)
	c.publishScore(t, feed, upstream, 9, 4)
	ws.expectUpdate(t, target, `"rounds_a":9`)
}

type cluster struct {
	env    []string // the processes' environment
	minio  *miniotest.Server
	redis  *redistest.Server
	store  string
	st     store.Store
	jobs   *edgeProc
	edges  []*edgeProc
	keys   map[string]string // plan -> key
	keyIDs map[string]string // plan -> key id
}

// startCluster starts MinIO, redis-server, `eo jobs` (a run every 2 s) on
// a generated world and two edges, and creates a key of each plan in the
// shared key store. The environment is the test's too, so `run` (eo keys,
// eo generate) works on the same store and Redis.
func startCluster(t *testing.T) *cluster {
	c := &cluster{minio: miniotest.Start(t), redis: redistest.StartServer(t), store: "s3://eo-cluster/world"}
	ctx := context.Background()
	s3 := store.S3Options{Endpoint: c.minio.Endpoint, AccessKey: miniotest.AccessKey, SecretKey: miniotest.SecretKey}
	b := s3
	b.Bucket, b.CreateBucket = "eo-cluster", true
	if _, err := store.NewS3(ctx, b); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plans := filepath.Join(dir, "plans.json")
	if err := os.WriteFile(plans, []byte(clusterPlans), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"EO_S3_ENDPOINT=" + c.minio.Endpoint, "EO_S3_ACCESS_KEY=" + miniotest.AccessKey,
		"EO_S3_SECRET_KEY=" + miniotest.SecretKey, "EO_S3_IO_TIMEOUT=1s", "EO_S3_MAX_RETRIES=2",
		"EO_REDIS_URL=" + c.redis.URL, "EO_POLL_INTERVAL=500ms", "EO_PLANS=" + plans}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	c.env = env
	var err error
	if c.st, err = store.Open(ctx, c.store, s3); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"generate", "--store", c.store, "--work", t.TempDir(), "--matches", "60", "--now", "2026-06-01T12:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	c.jobs = startEO(t, 0, env, "jobs", "--store", c.store, "--work", filepath.Join(dir, "jobs"), "--schedule", "@every 2s",
		"--land-every", "1s")
	c.keys, c.keyIDs = sharedKeys(t, c.redis.URL)
	c.waitPointer(t, "") // an edge with no snapshot anywhere refuses to start
	for _, name := range []string{"a", "b"} {
		c.edges = append(c.edges, startEdgeIn(t, c.store, filepath.Join(dir, "edge-"+name), c.keys["internal"], 0, env...))
	}
	return c
}

// sharedKeys creates an account and a key of each plan in the Redis key
// store, as `eo keys` with EO_REDIS_URL does.
func sharedKeys(t *testing.T, url string) (keys, ids map[string]string) {
	t.Helper()
	st, err := access.OpenRedisKeys(context.Background(), url, "eo:", access.RedisOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys, ids = map[string]string{}, map[string]string{}
	// "revocable" is a second internal key, the one the revocation test
	// revokes (the standard key's bucket is spent by then).
	plans := []string{access.PlanTrial, access.PlanStandard, access.PlanInternal, access.PlanInternal}
	names := []string{access.PlanTrial, access.PlanStandard, access.PlanInternal, "revocable"}
	plain, kid := createKeys(t, st, plans...)
	for i, name := range names {
		keys[name], ids[name] = plain[i], kid[i]
	}
	return keys, ids
}

// waitPointer waits up to 2 minutes for a published snapshot other than
// not, and returns its pointer.
func (c *cluster) waitPointer(t *testing.T, not string) publish.Pointer {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := publish.ReadPointer(context.Background(), c.st)
		if err == nil && p.SnapshotID != not {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("eo jobs published nothing new (last: %v):\n%s", err, c.jobs.out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitManifest waits up to 2 minutes for a published snapshot whose
// manifest satisfies ok, and returns that manifest.
func (c *cluster) waitManifest(t *testing.T, ok func(publish.Manifest) bool) publish.Manifest {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, m, err := publish.LoadLatest(context.Background(), c.st)
		if err == nil && ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("eo jobs published no such snapshot (last: %+v, %v):\n%s", m.Extra, err, c.jobs.out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// spread sends n requests to each edge at once with key and counts the
// answers: served (200) and refused for a limit (429).
func (c *cluster) spread(t *testing.T, key string, n int) (ok, limited int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	other := map[int]int{}
	for _, e := range c.edges {
		for i := 0; i < n; i++ {
			wg.Go(func() {
				code, _ := e.get("/v1/cs2/teams?limit=1", key)
				mu.Lock()
				defer mu.Unlock()
				switch code {
				case 200:
					ok++
				case 429:
					limited++
				default:
					other[code]++
				}
			})
		}
	}
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("answers other than 200 and 429: %v", other)
	}
	return ok, limited
}

// liveTarget picks a scheduled or live match of the served snapshot and
// returns its service id and upstream id (from the snapshot's internal
// live_ids table, read with DuckDB).
func (c *cluster) liveTarget(t *testing.T, e *edgeProc, snapshot string) (id, upstream string) {
	t.Helper()
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	code, body := e.get("/v1/cs2/matches?status=live,scheduled&limit=1", c.keys["internal"])
	if code != 200 || json.Unmarshal(body, &page) != nil || len(page.Data) == 0 {
		t.Fatalf("a live or scheduled match: %d %s", code, body)
	}
	id = page.Data[0].ID
	r, err := c.st.Get(context.Background(), "snapshots/"+snapshot+"/"+publish.InternalDir+"/live_ids.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	file := filepath.Join(t.TempDir(), "live_ids.parquet")
	b, err := io.ReadAll(r)
	if err != nil || os.WriteFile(file, b, 0o600) != nil {
		t.Fatalf("live_ids: %v", err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := "SELECT upstream_id FROM read_parquet(?) WHERE kind = 'match' AND id::VARCHAR = ?"
	if err := db.QueryRow(q, file, id).Scan(&upstream); err != nil {
		t.Fatalf("upstream id of match %s: %v", id, err)
	}
	return id, upstream
}

// publishScore puts a score event on the shared feed, as the live ingester
// of a deployment does: the first map in play at a rounds to b (the series
// at 0:0, a score every format allows: an impossible one is refused).
func (c *cluster) publishScore(t *testing.T, feed *live.RedisFeed, upstream string, a, b int) {
	t.Helper()
	zero := 0
	ev := live.Event{Kind: live.KindScore, MatchID: upstream, Status: "live", ScoreA: &zero, ScoreB: &zero,
		LiveState: json.RawMessage(fmt.Sprintf(`{"map_number":1,"map_name":"de_mirage","rounds_a":%d,"rounds_b":%d}`, a, b)),
		ChangedAt: time.Now().UTC()}
	if err := feed.Publish(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
}

// matchData is the data object of GET /v1/cs2/matches/{id}?include=maps
// on an edge: what a match frame carries.
func (c *cluster) matchData(t *testing.T, e *edgeProc, id string) string {
	t.Helper()
	code, body := e.get("/v1/cs2/matches/"+id+"?include=maps", c.keys["internal"])
	var r struct {
		Data json.RawMessage `json:"data"`
	}
	if code != 200 || json.Unmarshal(body, &r) != nil {
		t.Fatalf("match %s: %d %s", id, code, body)
	}
	return string(r.Data)
}

// wsConn is a real WebSocket client of an edge.
type wsConn struct{ *websocket.Conn }

type wsFrame struct {
	Type   string          `json:"type"`
	Target string          `json:"target"`
	Code   string          `json:"code"`
	Seq    uint64          `json:"seq"`
	Resync bool            `json:"resync"`
	Data   json.RawMessage `json:"data"`
	raw    string
}

// subscribe mints a ticket on edge mint, connects to edge on with it, and
// subscribes to target, reading the subscribed and snapshot frames.
func (c *cluster) subscribe(t *testing.T, mint, on *edgeProc, target string) *wsConn {
	t.Helper()
	ws := c.dial(t, mint, on)
	ws.send(t, fmt.Sprintf(`{"type":"subscribe","target":%q}`, target))
	for _, want := range []string{"subscribed", "snapshot"} {
		if f := ws.read(t); f.Type != want || f.Target != target {
			t.Fatalf("on %s: frame %+v, want %s of %s", on.addr, f, want, target)
		}
	}
	return ws
}

// resume connects to edge on (a ticket of on) and subscribes to target with
// since_seq, reading the subscribed frame.
func (c *cluster) resume(t *testing.T, on *edgeProc, target string, since uint64) *wsConn {
	t.Helper()
	ws := c.dial(t, on, on)
	ws.send(t, fmt.Sprintf(`{"type":"subscribe","target":%q,"since_seq":%d}`, target, since))
	if f := ws.read(t); f.Type != "subscribed" || f.Target != target {
		t.Fatalf("on %s: frame %s, want subscribed to %s", on.addr, f.raw, target)
	}
	return ws
}

func (ws *wsConn) send(t *testing.T, frame string) {
	t.Helper()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		t.Fatal(err)
	}
}

// barrier subscribes to target and fails unless the next frames are its
// acknowledgement and snapshot (nothing else was queued before them).
func (ws *wsConn) barrier(t *testing.T, target string) {
	t.Helper()
	ws.send(t, fmt.Sprintf(`{"type":"subscribe","target":%q}`, target))
	for _, want := range []string{"subscribed", "snapshot"} {
		if f := ws.read(t); f.Type != want || f.Target != target {
			t.Fatalf("frame %.300s, want %s of %s", f.raw, want, target)
		}
	}
}

// dial mints a ticket of the internal key on edge mint and opens a
// WebSocket on edge on with it.
func (c *cluster) dial(t *testing.T, mint, on *edgeProc) *wsConn {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+on.addr+c.ticket(t, mint, c.keys["internal"]), nil)
	if err != nil {
		t.Fatalf("a ticket of %s on %s: %v", mint.addr, on.addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &wsConn{conn}
}

// ticket mints a WebSocket ticket of key on edge mint and returns its URL
// path.
func (c *cluster) ticket(t *testing.T, mint *edgeProc, key string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+mint.addr+"/v1/cs2/ws-token", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Data struct {
			URL string `json:"url"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil || tok.Data.URL == "" {
		t.Fatalf("ws-token on %s: %d %v", mint.addr, resp.StatusCode, err)
	}
	return tok.Data.URL
}

func (ws *wsConn) read(t *testing.T) wsFrame {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("websocket read: %v", err)
	}
	var f wsFrame
	if err := json.Unmarshal(msg, &f); err != nil {
		t.Fatalf("frame %s: %v", msg, err)
	}
	f.raw = string(msg)
	return f
}

// expectUpdate reads frames until an update of target containing want
// (skipping other updates of target) and returns it.
func (ws *wsConn) expectUpdate(t *testing.T, target, want string) wsFrame {
	t.Helper()
	for {
		f := ws.read(t)
		if f.Type != "update" || f.Target != target {
			t.Fatalf("frame %+v, want an update of %s", f, target)
		}
		if strings.Contains(string(f.Data), want) {
			return f
		}
	}
}

// downloadExports lists /exports on edge e, takes every table through
// /exports/{table} (a 302 to a presigned MinIO URL, fetched without the
// API key), and checks each file against the snapshot's manifest (size,
// SHA-256) and reads it with DuckDB (the manifest's row count).
func (c *cluster) downloadExports(t *testing.T, e *edgeProc, snapshot string) {
	t.Helper()
	m, err := publish.ReadManifest(context.Background(), c.st, snapshot)
	if err != nil {
		t.Fatal(err)
	}
	code, body := e.get("/v1/cs2/exports", c.keys["internal"])
	var list struct {
		Data []struct {
			Table       string `json:"table"`
			DownloadURL string `json:"download_url"`
		} `json:"data"`
	}
	if code != 200 || json.Unmarshal(body, &list) != nil {
		t.Fatalf("/exports: %d %s", code, body)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	noRedirect := &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	dir := t.TempDir()
	seen := 0
	for _, te := range m.Tables {
		if te.Internal {
			continue
		}
		seen++
		req, _ := http.NewRequest(http.MethodGet, "http://"+e.addr+"/v1/cs2/exports/"+te.Name, nil)
		req.Header.Set("Authorization", "Bearer "+c.keys["internal"])
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusFound || !strings.Contains(loc, "X-Amz-Signature=") {
			t.Fatalf("/exports/%s with an S3 store: %d, Location %q", te.Name, resp.StatusCode, loc)
		}
		got, err := http.Get(loc) // no API key: the presigned URL is the credential
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil || got.StatusCode != 200 {
			t.Fatalf("presigned GET of %s: %d %v", te.Name, got.StatusCode, err)
		}
		sum := sha256.Sum256(b)
		if int64(len(b)) != te.Bytes || hex.EncodeToString(sum[:]) != te.SHA256 {
			t.Fatalf("%s: %d bytes, sha256 %x; the manifest says %d, %s", te.Name, len(b), sum, te.Bytes, te.SHA256)
		}
		path := filepath.Join(dir, te.Name+".parquet")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		var rows int64
		if err := db.QueryRow("SELECT count(*) FROM read_parquet(?)", path).Scan(&rows); err != nil || rows != te.Rows {
			t.Fatalf("%s in DuckDB: %d rows, %v; the manifest says %d", te.Name, rows, err, te.Rows)
		}
	}
	if seen != len(list.Data) || seen == 0 {
		t.Fatalf("/exports lists %d tables, the manifest has %d customer tables", len(list.Data), seen)
	}
}

package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/redistest"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/push"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/view"
)

// liveServer is a test server with the live path configured and a real TCP
// listener (app.Test cannot upgrade).
type liveServer struct {
	*testServer
	addr string
	feed live.Feed
}

func newLiveServer(t testing.TB, o push.Options) *liveServer {
	t.Helper()
	if o.Feed == nil {
		o.Feed = live.NewMemoryFeed()
	}
	ts := testServerOf(t, fixtureStore(t), func(lo *Options) { lo.Live = o })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := ts.Push().RunLive(ctx); err != nil {
		t.Fatal(err)
	}
	return &liveServer{testServer: ts, addr: listen(t, ts), feed: o.Feed}
}

// listen serves ts's app on a loopback port until the test ends and
// returns its address.
func listen(t testing.TB, ts *testServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ts.App().Listener(ln) }()
	t.Cleanup(func() { _ = ts.App().ShutdownWithTimeout(2 * time.Second) })
	return ln.Addr().String()
}

// mint mints a ticket through the app (auth, contract check) and returns it.
func (ls *liveServer) mint(t testing.TB, key string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/cs2/ws-token", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	r := ls.do(t, req)
	if r.status != 200 {
		t.Fatalf("ws-token: %d %s", r.status, r.body)
	}
	var body struct {
		Data struct {
			Token     string `json:"token"`
			ExpiresAt string `json:"expires_at"`
			URL       string `json:"url"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Data.Token) != 64 || body.Data.URL != "/v1/ws?token="+body.Data.Token {
		t.Fatalf("ticket body: %s", r.body)
	}
	exp, err := time.Parse(time.RFC3339, body.Data.ExpiresAt)
	if err != nil || !strings.HasSuffix(body.Data.ExpiresAt, "Z") || exp.Sub(ls.now) < 59*time.Second || exp.Sub(ls.now) > 60*time.Second {
		t.Fatalf("expires_at %q (now %s)", body.Data.ExpiresAt, ls.now)
	}
	return body.Data.Token
}

type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

// dial opens the channel with a query ("token=..." or "apiKey=...").
func (ls *liveServer) dial(t *testing.T, query string) (*wsClient, *http.Response, error) {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws://"+ls.addr+"/v1/ws?"+query, nil)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { c.Close() })
	return &wsClient{t: t, c: c}, resp, nil
}

func (ls *liveServer) open(t *testing.T) *wsClient {
	t.Helper()
	c, resp, err := ls.dial(t, "token="+ls.mint(t, goodKey))
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	return c
}

type frame struct {
	Type    string          `json:"type"`
	Target  string          `json:"target"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Seq     int             `json:"seq"`
	Data    json.RawMessage `json:"data"`
	raw     string
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	if err := c.c.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

func (c *wsClient) read() (frame, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := c.c.ReadMessage()
	if err != nil {
		return frame{}, err
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		return frame{}, fmt.Errorf("frame is not JSON: %s", b)
	}
	f.raw = string(b)
	if strings.Contains(f.raw, "bk-0") {
		c.t.Errorf("a frame names a book: %s", b)
	}
	return f, nil
}

func (c *wsClient) expect(typ, target string) frame {
	c.t.Helper()
	f, err := c.read()
	if err != nil {
		c.t.Fatalf("waiting for %s %s: %v", typ, target, err)
	}
	if f.Type != typ || f.Target != target {
		c.t.Fatalf("want %s %s, got %s", typ, target, f.raw)
	}
	return f
}

// closed waits for the server to end the connection.
func (c *wsClient) closed(within time.Duration) bool {
	_ = c.c.SetReadDeadline(time.Now().Add(within))
	for {
		if _, _, err := c.c.ReadMessage(); err != nil {
			var ne net.Error
			return !(errorsAs(err, &ne) && ne.Timeout())
		}
	}
}

func errorsAs(err error, target *net.Error) bool {
	ne, ok := err.(net.Error)
	if ok {
		*target = ne
	}
	return ok
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !proctest.Within(5*time.Second, 5*time.Millisecond, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// handshakeError checks a refused handshake: the status and the JSON error
// envelope, before any upgrade.
func handshakeError(t *testing.T, resp *http.Response, err error, status int, code string) {
	t.Helper()
	if err == nil || resp == nil {
		t.Fatalf("handshake accepted, want %d %s", status, code)
	}
	body, _ := io.ReadAll(resp.Body)
	var env errorBody
	if resp.StatusCode != status || json.Unmarshal(body, &env) != nil || env.Error.Code != code ||
		env.Error.RequestID == "" || env.Error.RequestID != resp.Header.Get("X-Request-Id") {
		t.Fatalf("handshake: %d %s, want %d %s", resp.StatusCode, body, status, code)
	}
}

func liveMatchOf(t *testing.T, ls *liveServer) (*Match, string) {
	t.Helper()
	for i := range ls.snap().Matches() {
		m := &ls.snap().Matches()[i]
		if up := ls.snap().Upstream(m.ID); m.Status == "scheduled" && up != "" {
			return m, up
		}
	}
	t.Fatal("fixture has no scheduled match with an upstream id")
	return nil, ""
}

// sentinelOf is the target of a match of ls's snapshot other than m: one
// the tests subscribe to as a barrier (drain, barrier), whose frames never
// mix with m's.
func sentinelOf(ls *liveServer, m *Match) string {
	for _, x := range ls.snap().Matches() {
		if x.ID != m.ID {
			return "match:" + x.ID.String()
		}
	}
	return ""
}

func TestWSTicketSingleUseAndExpiry(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	tok := ls.mint(t, goodKey)
	c, _, err := ls.dial(t, "token="+tok)
	if err != nil {
		t.Fatal(err)
	}
	c.c.Close()
	// Reuse is refused before the upgrade, with the error envelope.
	_, resp, err := ls.dial(t, "token="+tok)
	handshakeError(t, resp, err, 401, "unauthorized")

	// Expiry: a ticket presented after 60 s (fake clock) is refused; one
	// presented just before is accepted.
	tok = ls.mint(t, goodKey)
	ls.now = ls.now.Add(61 * time.Second)
	_, resp, err = ls.dial(t, "token="+tok)
	handshakeError(t, resp, err, 401, "unauthorized")
	tok = ls.mint(t, goodKey)
	ls.now = ls.now.Add(59 * time.Second)
	if _, resp, err := ls.dial(t, "token="+tok); err != nil {
		t.Fatalf("a 59 s old ticket was refused: %v %v", err, resp)
	}
	// Unknown ticket, no credentials, a bad fallback key.
	_, resp, err = ls.dial(t, "token=deadbeef")
	handshakeError(t, resp, err, 401, "unauthorized")
	_, resp, err = ls.dial(t, "")
	handshakeError(t, resp, err, 401, "missing_api_key")
	_, resp, err = ls.dial(t, "apiKey="+revokedKey)
	handshakeError(t, resp, err, 401, "invalid_api_key")
	// The deprecated apiKey fallback works and says it is deprecated.
	if _, resp, err := ls.dial(t, "apiKey="+goodKey); err != nil || resp.Header.Get("Deprecation") != "true" {
		t.Fatalf("apiKey fallback: %v, Deprecation %q", err, resp.Header.Get("Deprecation"))
	}
	// A plain GET (no upgrade) does not consume a ticket.
	tok = ls.mint(t, goodKey)
	r := ls.get(t, "/v1/ws?token="+tok, "-")
	if r.status != 400 {
		t.Fatalf("plain GET: %d %s", r.status, r.body)
	}
	if _, _, err := ls.dial(t, "token="+tok); err != nil {
		t.Fatalf("the ticket was consumed by a plain GET: %v", err)
	}
	// Minting needs a key.
	req := httptest.NewRequest(http.MethodPost, "/v1/cs2/ws-token", nil)
	if r := ls.do(t, req); r.status != 401 {
		t.Fatalf("unauthenticated mint: %d", r.status)
	}
}

// The per-key cap is the key's plan's ws_connections (which EO_PLANS
// overrides), not a number of the edge's own.
func TestWSConnectionCapIsThePlans(t *testing.T) {
	clk := &fakeClock{t: fixtureNow}
	ctr, err := access.OpenEmbedded(t.TempDir()+"/counters.db", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctr.Close() })
	keys := openTestKeys(t, clk)
	plans := access.DefaultPlans()
	std := plans[access.PlanStandard]
	std.WSConnections = 2
	plans[access.PlanStandard] = std
	ms := newMeteredServer(t, ctr, keys, plans, clk)
	ls := &liveServer{testServer: ms.testServer, addr: listen(t, ms.testServer)}
	key := newTestKey(t, keys, access.PlanStandard)
	var third *wsClient
	for i := range 3 {
		c, resp, err := ls.dial(t, "token="+ls.mint(t, key))
		if err != nil {
			t.Fatalf("dial %d: %v (%v)", i+1, err, resp)
		}
		if i < 2 {
			waitFor(t, "the connection to be admitted", func() bool { return ls.Push().Stats().Connections == int64(i+1) })
		}
		third = c
	}
	if f, err := third.read(); err != nil || f.Type != "error" || f.Code != "connection_limit" {
		t.Fatalf("a 3rd connection on a plan capped at 2: %+v %v", f, err)
	}
}

func TestWSConnectionCap(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	var conns []*wsClient
	for i := 0; i < 5; i++ {
		conns = append(conns, ls.open(t))
	}
	waitFor(t, "5 connections", func() bool { return ls.Push().Stats().Connections == 5 })
	sixth := ls.open(t)
	f, err := sixth.read()
	if err != nil || f.Type != "error" || f.Code != "connection_limit" {
		t.Fatalf("6th connection: %+v %v", f, err)
	}
	if _, _, err := sixth.c.ReadMessage(); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
		t.Fatalf("6th connection not closed after the error frame: %v", err)
	}
	waitMetrics(t, ls.testServer, map[string]float64{`eo_ws_connections_refused_total{reason="connection_limit"}`: 1,
		"eo_ws_connections_total": 5, "eo_ws_connections": 5})
	// The refused connection holds no slot; closing one frees a slot at once.
	_ = conns[0].c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	conns[0].c.Close()
	waitFor(t, "the slot to be freed", func() bool { return ls.Push().Stats().Connections == 4 })
	again := ls.open(t)
	again.send(map[string]string{"type": "subscribe", "target": "match:" + ls.snap().Matches()[0].ID.String()})
	again.expect("subscribed", "match:"+ls.snap().Matches()[0].ID.String())
	// Another key has its own slots; the per-plan cap applies.
	ls.Server.o.Auth.(*testAuth).mu.Lock()
	ls.Server.o.Auth.(*testAuth).keys[trialKey] = access.Principal{KeyID: "k2", AccountID: "a2", Plan: "trial"}
	ls.Server.o.Auth.(*testAuth).mu.Unlock()
	if c, _, err := ls.dial(t, "token="+ls.mint(t, trialKey)); err != nil {
		t.Fatal(err)
	} else {
		c.send(map[string]string{"type": "pong"})
		c.send(map[string]string{"type": "subscribe", "target": "match:" + ls.snap().Matches()[0].ID.String()})
		c.expect("subscribed", "match:"+ls.snap().Matches()[0].ID.String())
	}
}

const (
	trialKey   = "eo_live_000000000000000000000000000000000000000000000003"
	sandboxKey = "eo_sandbox_000000000000000000000000000000000000000000000004"
)

func TestWSPingTimeout(t *testing.T) {
	ls := newLiveServer(t, push.Options{PingInterval: 40 * time.Millisecond, PongTimeout: 300 * time.Millisecond})
	answering := ls.open(t)
	silent := ls.open(t) // never reads, so never answers a ping
	waitFor(t, "2 connections", func() bool { return ls.Push().Stats().Connections == 2 })
	// The answering client reads (its library answers pings while reading).
	go func() {
		for {
			if _, _, err := answering.c.ReadMessage(); err != nil {
				return
			}
		}
	}()
	waitFor(t, "the silent client to be closed", func() bool { return ls.Push().Stats().Connections == 1 })
	time.Sleep(600 * time.Millisecond) // two time-outs later the answering client is still there
	if n := ls.Push().Stats().Connections; n != 1 {
		t.Fatalf("connections %d, want the answering one", n)
	}
	if !silent.closed(2 * time.Second) {
		t.Fatal("the silent client's connection is still open")
	}
}

func TestWSSlowConsumer(t *testing.T) {
	ls := newLiveServer(t, push.Options{WriteTimeout: 500 * time.Millisecond})
	m, up := liveMatchOf(t, ls)
	target := "match:" + m.ID.String()
	fast := ls.open(t)
	// The slow client never reads; a small receive buffer (no autotuning
	// up to tens of MB) keeps the test short.
	d := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if err == nil {
			_ = c.(*net.TCPConn).SetReadBuffer(16 << 10)
		}
		return c, err
	}}
	sc, _, err := d.Dial("ws://"+ls.addr+"/v1/ws?token="+ls.mint(t, goodKey), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	slow := &wsClient{t: t, c: sc}
	snapSeq := 0
	for _, c := range []*wsClient{fast, slow} {
		c.send(map[string]string{"type": "subscribe", "target": target})
		c.expect("subscribed", target)
		snapSeq = c.expect("snapshot", target).Seq
	}
	const n = 1500 // about 25 MB: more than the socket buffers and the queue hold
	// a live_state just under raw.MaxJSON: a longer one is refused, as the
	// pipeline would quarantine it
	pad := json.RawMessage(`{"pad":"` + strings.Repeat("x", raw.MaxJSON-16) + `"}`)
	// Updates are conflated: changes that arrive together reach a client as
	// one update with the newest state, so the fast client sees increasing
	// seqs (the feed positions of the events: consecutive here, one frame
	// per event) and, last, the final state (event n).
	got := make(chan int, 1)
	var progress atomic.Int64 // the newest event the fast client holds
	base := fixtureNow.Add(time.Hour)
	go func() {
		seq, last := snapSeq, 0
		defer func() { got <- last }()
		for last < n {
			f, err := fast.read()
			if err != nil {
				break
			}
			if f.Type == "update" {
				if f.Seq != seq+1 {
					t.Errorf("fast client: seq %d after %d", f.Seq, seq)
				}
				seq = f.Seq
				var d struct {
					ChangedAt time.Time `json:"changed_at"`
				}
				if err := json.Unmarshal(f.Data, &d); err != nil {
					t.Error(err)
					break
				}
				last = int(d.ChangedAt.Sub(base) / time.Millisecond)
				progress.Store(int64(last))
			}
		}
	}()
	ctx := context.Background()
	for i := 1; i <= n; i++ {
		ev := live.Event{Kind: live.KindScore, MatchID: up, Status: "live", ScoreA: intp(0), ScoreB: intp(0),
			LiveState: pad, ChangedAt: fixtureNow.Add(time.Hour + time.Duration(i)*time.Millisecond)}
		if err := ls.feed.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
		// The fast client keeps up: the next event is published once it
		// holds this one, so every event is a frame of its own (nothing to
		// conflate) and the slow client falls n frames behind.
		for deadline := time.Now().Add(10 * time.Second); progress.Load() < int64(i) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Microsecond)
		}
	}
	select {
	case last := <-got:
		if last != n {
			t.Fatalf("the fast client's newest state is event %d of %d", last, n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the fast client stalled")
	}
	waitFor(t, "the slow client to be cut off", func() bool { return ls.Push().Stats().Connections == 1 })
	// The slow_consumer error frame is best effort: it queues behind
	// megabytes the client never read, so it is not asserted here.
}

func intp(v int) *int { return &v }

func TestWSEndToEnd(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	m, up := liveMatchOf(t, ls)
	mt, ot := "match:"+m.ID.String(), "odds:"+m.ID.String()
	c := ls.open(t)

	// Frame errors keep the connection open.
	c.send(map[string]string{"type": "subscribe", "target": "match:nope"})
	if f := c.expect("error", "match:nope"); f.Code != "invalid_target" {
		t.Fatalf("invalid target: %s", f.raw)
	}
	unknown := "match:0190aaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
	c.send(map[string]string{"type": "subscribe", "target": unknown})
	if f := c.expect("error", unknown); f.Code != "unknown_target" {
		t.Fatalf("unknown target: %s", f.raw)
	}
	if err := c.c.WriteMessage(websocket.TextMessage, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if f := c.expect("error", ""); f.Code != "bad_frame" {
		t.Fatalf("bad frame: %s", f.raw)
	}

	c.send(map[string]string{"type": "subscribe", "target": mt})
	c.expect("subscribed", mt)
	snap := c.expect("snapshot", mt)
	var md struct {
		ID        string           `json:"id"`
		Status    string           `json:"status"`
		ScoreA    *int             `json:"score_a"`
		ScoreB    *int             `json:"score_b"`
		LiveState json.RawMessage  `json:"live_state"`
		ChangedAt string           `json:"changed_at"`
		Maps      []view.MapResult `json:"maps"`
	}
	if err := json.Unmarshal(snap.Data, &md); err != nil || md.ID != m.ID.String() || md.Status != "scheduled" || md.Maps == nil {
		t.Fatalf("match snapshot: %s", snap.raw)
	}
	c.send(map[string]string{"type": "subscribe", "target": ot})
	c.expect("subscribed", ot)
	if f := c.expect("snapshot", ot); string(f.Data) == "" || f.Data[0] != '[' {
		t.Fatalf("odds snapshot: %s", f.raw)
	}

	// A score change.
	ctx := context.Background()
	at := fixtureNow.Add(time.Hour).UTC()
	_ = ls.feed.Publish(ctx, live.Event{Kind: live.KindScore, MatchID: up, Status: "live", ScoreA: intp(1), ScoreB: intp(0),
		LiveState: json.RawMessage(`{"map_number":2,"map_name":"de_nuke","round":4,"rounds_a":3,"rounds_b":0,"side_a":"ct"}`),
		Maps:      []live.MapScore{{MapNumber: 1, MapName: "de_mirage", ScoreA: 13, ScoreB: 7, Done: true}, {MapNumber: 2, MapName: "de_nuke", ScoreA: 3}},
		ChangedAt: at.Add(123456789 * time.Nanosecond)})
	u := c.expect("update", mt)
	md.Maps = nil
	// maps are the played maps (as include=maps); the map in play is in live_state.
	if err := json.Unmarshal(u.Data, &md); err != nil || md.Status != "live" || *md.ScoreA != 1 || *md.ScoreB != 0 ||
		len(md.LiveState) == 0 || len(md.Maps) != 1 || md.Maps[0].ScoreA != 13 || md.Maps[0].Status != "played" || u.Seq != snap.Seq+1 {
		t.Fatalf("score update: %s", u.raw)
	}
	// Times at the pipeline's precision (microseconds): the snapshot that
	// lands the event shows the same changed_at.
	if want := at.Add(123456 * time.Microsecond).Format(time.RFC3339Nano); md.ChangedAt != want {
		t.Fatalf("score update changed_at %s, want %s (cut to the microsecond)", md.ChangedAt, want)
	}
	// REST reflects it between snapshots (detail and list).
	r := ls.get(t, "/v1/cs2/matches/"+m.ID.String())
	if !strings.Contains(string(r.body), `"status":"live","stage"`) || !strings.Contains(string(r.body), `"score_a":1,"score_b":0`) {
		t.Fatalf("detail without the live overlay: %s", r.body)
	}
	r = ls.get(t, "/v1/cs2/matches?team="+m.TeamAID.String()+"&limit=200")
	if !strings.Contains(string(r.body), `"rounds_a":3`) {
		t.Fatalf("list without the live overlay: %s", r.body)
	}

	// A score the pipeline would quarantine (a live series cannot stand at
	// 9:0 in any format) changes nothing: no frame (the price updates
	// below come first), REST keeps 1:0, and it is counted by reason.
	_ = ls.feed.Publish(ctx, live.Event{Kind: live.KindScore, MatchID: up, Status: "live", ScoreA: intp(9), ScoreB: intp(0),
		ChangedAt: at.Add(time.Second)})

	// A price the pipeline would quarantine (a draw in a two-way market)
	// is not in the line: the de-vigged prices below are those of the
	// home and away prices alone.
	_ = ls.feed.Publish(ctx, live.Event{Kind: live.KindPrice, MatchID: up, Book: "bk-01", Market: "match_winner",
		Outcome: "draw", Price: 3.2, CapturedAt: at.Add(time.Second)})

	// Price changes: two contributors pricing both legs publish a line.
	for _, p := range []struct {
		book, copies, outcome string
		price                 float64
	}{{"bk-01", "", "home", 1.60}, {"bk-01", "", "away", 2.40}, {"bk-06", "bk-01", "home", 1.60},
		{"bk-02", "", "home", 1.55}, {"bk-02", "", "away", 2.50}} {
		_ = ls.feed.Publish(ctx, live.Event{Kind: live.KindPrice, MatchID: up, Book: p.book, CopiesBook: p.copies,
			Market: "match_winner", Outcome: p.outcome, Price: p.price, CapturedAt: at.Add(time.Second)})
	}
	// The first lines also flip the match's data_available.odds: its
	// subscribers get a match update too.
	var rows []view.OddsLine
	matchUpdated := false
	for len(rows) < 2 || !matchUpdated {
		u, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		if u.Type == "update" && u.Target == mt {
			if !strings.Contains(string(u.Data), `"odds":true`) {
				t.Fatalf("match update without data_available.odds: %s", u.raw)
			}
			matchUpdated = true
			continue
		}
		if u.Type != "update" || u.Target != ot {
			t.Fatalf("want an update, got %s", u.raw)
		}
		var part []view.OddsLine
		if err := json.Unmarshal(u.Data, &part); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, part...)
	}
	want := map[string]float64{}
	p1, p2 := (1/1.60)/(1/1.60+1/2.40), (1/1.55)/(1/1.55+1/2.50)
	want["home"] = 1 / ((p1 + p2) / 2)
	want["away"] = 1 / (((1 - p1) + (1 - p2)) / 2)
	for _, r := range rows[len(rows)-2:] {
		if r.Source != "eo_market" || r.BookCount == nil || *r.BookCount != 2 || r.MatchID == nil || *r.MatchID != m.ID ||
			r.Market != "match_winner" || abs(r.Price-want[r.OutcomeKey]) > 1e-9 {
			t.Fatalf("odds update row: %+v (want price %v)", r, want[r.OutcomeKey])
		}
	}
	if r := ls.get(t, "/v1/cs2/matches/"+m.ID.String()); !strings.Contains(string(r.body), `"score_a":1,"score_b":0`) {
		t.Fatalf("a refused 9:0 reached REST: %s", r.body)
	}
	waitMetrics(t, ls.testServer, map[string]float64{`eo_live_events_rejected_total{reason="impossible score"}`: 1,
		`eo_live_events_rejected_total{reason="outcome does not fit the market"}`: 1,
		`eo_live_events_rejected_total{reason="unknown status value"}`:            0})
	r = ls.get(t, "/v1/cs2/odds?match="+m.ID.String()+"&limit=3")
	var page struct {
		Data []view.OddsLine `json:"data"`
	}
	_ = json.Unmarshal(r.body, &page)
	if r.status != 200 || len(page.Data) < 2 || page.Data[0].BookCount == nil || len(page.Data) > 3 {
		t.Fatalf("/odds?match= without the live lines: %s", r.body)
	}
	r = ls.get(t, "/v1/cs2/odds?source=eo_market&limit=1000")
	if !strings.Contains(string(r.body), rows[len(rows)-1].ID.String()) {
		t.Fatalf("/odds snapshot without the live line %s", rows[len(rows)-1].ID.String())
	}

	// Unsubscribe stops the updates.
	c.send(map[string]string{"type": "unsubscribe", "target": mt})
	c.expect("unsubscribed", mt)
	_ = ls.feed.Publish(ctx, live.Event{Kind: live.KindScore, MatchID: up, Status: "live", ScoreA: intp(1), ScoreB: intp(1), ChangedAt: at.Add(time.Minute)})
	c.send(map[string]string{"type": "subscribe", "target": ot})
	c.expect("subscribed", ot) // not an update of mt in between
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// redisLive is the live path of an instance sharing rc's Redis with the
// others: feed, tickets and connection leases.
func redisLive(rc *redis.Client) push.Options {
	return push.Options{Feed: &live.RedisFeed{Client: rc}, Tickets: &push.RedisTickets{Client: rc},
		Limiter: &push.RedisLimiter{Client: rc}}
}

func TestWSRedisFanOut(t *testing.T) {
	rc := redistest.Client(t)
	a, b := newLiveServer(t, redisLive(rc)), newLiveServer(t, redisLive(rc))
	m, up := liveMatchOf(t, a)
	target := "match:" + m.ID.String()
	// A ticket minted on A is redeemed on B, once.
	tok := a.mint(t, goodKey)
	cb, _, err := b.dial(t, "token="+tok)
	if err != nil {
		t.Fatalf("a ticket minted on A was refused by B: %v", err)
	}
	_, resp, err := a.dial(t, "token="+tok)
	handshakeError(t, resp, err, 401, "unauthorized")
	ca := a.open(t)
	for _, c := range []*wsClient{ca, cb} {
		c.send(map[string]string{"type": "subscribe", "target": target})
		c.expect("subscribed", target)
		c.expect("snapshot", target)
	}
	pub := &live.RedisFeed{Client: rc}
	if err := pub.Publish(context.Background(), live.Event{Kind: live.KindScore, MatchID: up, Status: "live",
		ScoreA: intp(0), ScoreB: intp(0), ChangedAt: fixtureNow.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*wsClient{"A": ca, "B": cb} {
		if f := c.expect("update", target); !strings.Contains(string(f.Data), `"status":"live"`) {
			t.Errorf("instance %s: %s", name, f.raw)
		}
	}
	// The cap holds across the instances: 2 held, 3 more anywhere, then refused.
	// Each is admitted (holds its lease) before the next opens: the lease is
	// taken after the upgrade, and on a loaded machine a later connection
	// could otherwise take it first and leave the refusal to an earlier one.
	for i := 0; i < 3; i++ {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		c := srv.open(t)
		c.send(map[string]string{"type": "subscribe", "target": target})
		c.expect("subscribed", target)
	}
	extra := b.open(t)
	if f, err := extra.read(); err != nil || f.Code != "connection_limit" {
		t.Fatalf("6th connection across instances: %+v %v", f, err)
	}
}

// The metering rules of the ticket mint (the lead's middleware): sandbox keys
// get 403 sandbox_scope, and a mint draws a bucket token but no quota.
func TestWSTicketMetering(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	counters, err := access.OpenEmbedded(filepath.Join(t.TempDir(), "counters.db"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { counters.Close() })
	ls.Server.o.Meter = &access.Meter{C: counters, Plans: access.DefaultPlans(), Accounts: noAccounts{}, Now: func() time.Time { return ls.now }}
	auth := ls.Server.o.Auth.(*testAuth)
	auth.mu.Lock()
	auth.keys[sandboxKey] = access.Principal{KeyID: "ks", AccountID: "as", Plan: access.PlanSandbox}
	auth.mu.Unlock()

	req := httptest.NewRequest(http.MethodPost, "/v1/cs2/ws-token", nil)
	req.Header.Set("Authorization", "Bearer "+sandboxKey)
	if r := ls.do(t, req); r.status != 403 || r.code(t) != "sandbox_scope" {
		t.Fatalf("sandbox mint: %d %s", r.status, r.body)
	}
	mintHeaders := func() http.Header {
		req := httptest.NewRequest(http.MethodPost, "/v1/cs2/ws-token", nil)
		req.Header.Set("Authorization", "Bearer "+goodKey)
		r := ls.do(t, req)
		if r.status != 200 {
			t.Fatalf("mint: %d %s", r.status, r.body)
		}
		return r.header
	}
	h1 := mintHeaders()
	h2 := mintHeaders()
	if h1.Get("X-RateLimit-Remaining") == "" || h1.Get("X-RateLimit-Remaining") == h2.Get("X-RateLimit-Remaining") {
		t.Errorf("a mint does not draw a bucket token: %q then %q", h1.Get("X-RateLimit-Remaining"), h2.Get("X-RateLimit-Remaining"))
	}
	if h1.Get("X-Quota-Remaining") != h2.Get("X-Quota-Remaining") {
		t.Errorf("a mint draws quota: %q then %q", h1.Get("X-Quota-Remaining"), h2.Get("X-Quota-Remaining"))
	}
	// The deprecated fallback refuses sandbox keys too.
	_, resp, err := ls.dial(t, "apiKey="+sandboxKey)
	handshakeError(t, resp, err, 403, "sandbox_scope")
}

type noAccounts struct{}

func (noAccounts) GetAccount(id string) (access.Account, error) {
	return access.Account{ID: id, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, nil
}

// A client whose queue overflows gets the slow_consumer error frame and
// then a close frame (1008, reason slow_consumer), not a dropped
// connection: the frames queued before it still arrive in order.
func TestSlowConsumerGetsACloseFrame(t *testing.T) {
	ls := newLiveServer(t, push.Options{SendQueue: 8})
	m, _ := liveMatchOf(t, ls)
	target := "match:" + m.ID.String()
	c := ls.open(t)
	c.send(map[string]string{"type": "subscribe", "target": target})
	c.expect("subscribed", target)
	c.expect("snapshot", target)
	// The queue holds the subscription replies (a queue of one could
	// overflow on "subscribed" and "snapshot" alone). Frames pushed
	// faster than the writer drains it overflow it within a few (each
	// write takes a system call).
	frame := push.Frame([]byte(`{"type":"update","target":"` + target + `","data":{}}`))
	for i := 0; i < 1_000_000 && ls.Push().Hub().Broadcast(target, frame) > 0; i++ {
		if !ls.Push().Hub().Has(target) {
			break
		}
	}
	var sawError bool
	for {
		_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, b, err := c.c.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || ce.Text != "slow_consumer" {
				t.Fatalf("the connection ended with %v, want a close frame 1008 slow_consumer", err)
			}
			break
		}
		if bytes.Contains(b, []byte(`"code":"slow_consumer"`)) {
			sawError = true
		}
	}
	if !sawError {
		t.Error("no slow_consumer error frame before the close")
	}
	text := operatorMetrics(t, ls.testServer)
	if n, _ := proctest.MetricValue(text, "eo_ws_slow_consumer_closes_total"); n != 1 {
		t.Errorf("eo_ws_slow_consumer_closes_total %v, want 1", n)
	}
	if n, _ := proctest.MetricValue(text, "eo_ws_frames_dropped_total"); n < 1 {
		t.Errorf("eo_ws_frames_dropped_total %v, want the frame that overflowed the queue", n)
	}
	waitMetrics(t, ls.testServer, map[string]float64{"eo_ws_subscriptions": 0, "eo_ws_connections": 0})
}

// A client that sends 2,000 subscribes without reading the answers gets
// every answer, in order, at the pace it reads: subscribed and snapshot for
// the targets within the cap, a subscription_limit error naming each target
// past it, and the connection stays open (not cut off as a slow consumer
// for its own requests, whatever the queue size).
func TestUnpacedSubscribesPastTheCap(t *testing.T) {
	const limit, frames = 5, 2000
	ls := newLiveServer(t, push.Options{MaxSubscriptions: limit, SendQueue: 8})
	var targets []string
	for _, m := range ls.snap().Matches()[:10] {
		targets = append(targets, "match:"+m.ID.String(), "odds:"+m.ID.String())
	}
	c := ls.open(t)
	sent := make(chan error, 1)
	go func() {
		for i := range frames {
			b, _ := json.Marshal(map[string]string{"type": "subscribe", "target": targets[i%len(targets)]})
			if err := c.c.WriteMessage(websocket.TextMessage, b); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	within := map[string]bool{}
	for i := range frames {
		target := targets[i%len(targets)]
		if len(within) < limit {
			within[target] = true
		}
		if within[target] {
			c.expect("subscribed", target)
			c.expect("snapshot", target)
			continue
		}
		if f := c.expect("error", target); f.Code != "subscription_limit" {
			t.Fatalf("subscribe %d (%s) past the cap: %s, want subscription_limit", i, target, f.raw)
		}
	}
	if err := <-sent; err != nil {
		t.Fatalf("sending the subscribes: %v", err)
	}
	c.send(map[string]string{"type": "unsubscribe", "target": targets[0]})
	c.expect("unsubscribed", targets[0])
}

// The live path subscribes again when its feed subscription ends. A Redis
// connection that goes silent without closing (a failover whose old host
// vanished) is given up by the feed (live.RedisFeed.Idle); the edge then
// subscribes again each second until the link works, and live changes reach
// REST again. Meanwhile /ready's live_feed fails (not required). Before, an ended subscription was never made again: the edge
// showed no live change until it restarted.
func TestLivePathSubscribesAgainAfterASilentLink(t *testing.T) {
	srv := redistest.StartServer(t)
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	direct := redis.NewClient(opt)
	defer direct.Close()
	link := proctest.NewProxy(t, opt.Addr)
	opt.Addr = link.Addr
	// The service's bounds on every Redis call (access.ClientOptions).
	opt.ReadTimeout, opt.WriteTimeout, opt.DialTimeout, opt.PoolTimeout = 300*time.Millisecond, 300*time.Millisecond,
		300*time.Millisecond, 300*time.Millisecond
	proxied := redis.NewClient(opt)
	defer proxied.Close()
	ls := newLiveServer(t, push.Options{Feed: &live.RedisFeed{Client: proxied, Idle: 200 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ls.Push().Start(ctx)
	m, up := liveMatchOf(t, ls)
	pub := &live.RedisFeed{Client: direct}
	scoreShows := func(a int, at time.Time) {
		t.Helper()
		if err := pub.Publish(ctx, live.Event{Kind: live.KindScore, MatchID: up, Status: "live",
			ScoreA: intp(a), ScoreB: intp(0), ChangedAt: at}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`"score_a":%d,`, a)
		if !proctest.Within(10*time.Second, 20*time.Millisecond, func() bool {
			return strings.Contains(string(ls.get(t, "/v1/cs2/matches/"+m.ID.String()).body), want)
		}) {
			t.Fatalf("REST never showed score_a %d: %s", a, ls.get(t, "/v1/cs2/matches/"+m.ID.String()).body)
		}
	}
	scoreShows(0, fixtureNow.Add(time.Hour))
	link.Blackhole()
	if !proctest.Within(10*time.Second, 20*time.Millisecond, func() bool { return !ls.Push().Tracker().Running() }) {
		t.Fatal("the subscription over the silent link never ended")
	}
	// /ready's live_feed fails while the live path is not subscribed.
	if !proctest.Within(10*time.Second, 20*time.Millisecond, func() bool { return !readyCheck(t, ls.Server, "live_feed").OK }) {
		t.Fatal("live_feed stayed ok while the subscription was down")
	}
	time.Sleep(2 * time.Second) // attempts through the silent link fail
	link.Restore()
	// Pub/sub keeps nothing for an absent subscriber: publish (again) until
	// the live path, subscribed again, shows it.
	want := `"score_a":1,`
	if !proctest.Within(30*time.Second, 250*time.Millisecond, func() bool {
		if err := pub.Publish(ctx, live.Event{Kind: live.KindScore, MatchID: up, Status: "live",
			ScoreA: intp(1), ScoreB: intp(0), ChangedAt: fixtureNow.Add(2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(ls.get(t, "/v1/cs2/matches/"+m.ID.String()).body), want)
	}) {
		t.Fatal("the live path never subscribed again: REST never showed the score published after the link came back")
	}
	if c := readyCheck(t, ls.Server, "live_feed"); !c.OK || c.Required {
		t.Fatalf("live_feed after the link came back: %+v", c)
	}
}

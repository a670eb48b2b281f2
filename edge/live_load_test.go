package edge

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/eodata/eo/live"
	"github.com/eodata/eo/push"
)

// TestLiveLoad measures the live path on loopback: N WebSocket clients
// subscribed to one match, a score event published every 100 ms
// (EO_LIVE_LOAD_INTERVAL), and the
// feed-to-client latency of every delivered update (publish to the client's
// read). It is a load run, not a test: it only runs with EO_LIVE_LOAD set,
// e.g.
//
//	EO_LIVE_LOAD=1000,5000 go test ./edge -run TestLiveLoad -count=1 -v -timeout 10m
//
// and stops by itself. Figures go in BENCHMARKS.md ("Live").
func TestLiveLoad(t *testing.T) {
	spec := os.Getenv("EO_LIVE_LOAD")
	if spec == "" {
		t.Skip("set EO_LIVE_LOAD=1000,5000 to run the live load measurement")
	}
	for _, f := range splitComma(spec) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			t.Fatalf("EO_LIVE_LOAD: %q", f)
		}
		t.Run(fmt.Sprint(n), func(t *testing.T) { liveLoad(t, n) })
	}
}

func splitComma(s string) []string {
	var out []string
	for _, p := range []byte(s) {
		if p == ',' {
			out = append(out, "")
			continue
		}
		if len(out) == 0 {
			out = append(out, "")
		}
		out[len(out)-1] += string(p)
	}
	return out
}

func liveLoad(t *testing.T, n int) {
	events := 100
	if v, err := strconv.Atoi(os.Getenv("EO_LIVE_LOAD_EVENTS")); err == nil && v > 0 {
		events = v
	}
	interval := 100 * time.Millisecond
	if v, err := time.ParseDuration(os.Getenv("EO_LIVE_LOAD_INTERVAL")); err == nil {
		interval = v
	}
	ls := newLiveServer(t, LiveOptions{ConnLimits: map[string]int{"standard": n + 10}})
	m, up := liveMatchOf(t, ls)
	target := "match:" + m.ID.String()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()

	published := make([]time.Time, events+1) // by seq
	var pubMu sync.RWMutex
	lat := make([][]time.Duration, n)
	base := fixtureNow.Add(time.Hour)
	var ready, done sync.WaitGroup
	conns := make([]*websocket.Conn, n)
	ctx := context.Background()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		tok := fmt.Sprintf("%064x", i+1)
		if err := ls.live.o.Tickets.Put(ctx, tok, push.Ticket{KeyID: "k1", AccountID: "a1", Plan: "standard",
			ExpiresAt: ls.now.Add(time.Minute)}, time.Minute); err != nil {
			t.Fatal(err)
		}
		c, _, err := websocket.DefaultDialer.Dial("ws://"+ls.addr+"/v1/ws?token="+tok, nil)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		conns[i] = c
		if err := c.WriteJSON(map[string]string{"type": "subscribe", "target": target}); err != nil {
			t.Fatal(err)
		}
		ready.Add(1)
		done.Add(1)
		go func(i int, c *websocket.Conn) {
			defer done.Done()
			for {
				_, b, err := c.ReadMessage()
				if err != nil {
					return
				}
				now := time.Now()
				// The frame starts {"type":"update","target":"match:<36>","seq":N,
				// so the client reads seq without decoding the whole frame.
				switch {
				case bytes.HasPrefix(b, []byte(`{"type":"snapshot"`)):
					ready.Done()
				case bytes.HasPrefix(b, []byte(`{"type":"update"`)):
					// Updates are conflated under load: the event a frame
					// carries is read from its changed_at (event k is
					// stamped k ms after the base), not from its seq.
					i0 := bytes.Index(b, []byte(`"changed_at":"`)) + len(`"changed_at":"`)
					i1 := i0 + bytes.IndexByte(b[i0:], '"')
					at, err := time.Parse(time.RFC3339Nano, string(b[i0:i1]))
					if err != nil {
						t.Errorf("update without a changed_at: %s", b)
						return
					}
					k := int(at.Sub(base) / time.Millisecond)
					pubMu.RLock()
					p := published[k]
					pubMu.RUnlock()
					lat[i] = append(lat[i], now.Sub(p))
					if k == events {
						return
					}
				}
			}
		}(i, c)
	}
	ready.Wait()
	connectTime := time.Since(t0)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	held := ls.LiveStats().Connections
	perConn := float64(after.HeapInuse+after.StackInuse-before.HeapInuse-before.StackInuse) / float64(n)
	goroutines := float64(runtime.NumGoroutine()-g0) / float64(n)

	for i := 1; i <= events; i++ {
		pubMu.Lock()
		published[i] = time.Now()
		pubMu.Unlock()
		if err := ls.feed.Publish(ctx, live.Event{Kind: live.KindScore, MatchID: up, Status: "live",
			ScoreA: intp(0), ScoreB: intp(0), ChangedAt: base.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(interval)
	}
	waited := make(chan struct{})
	go func() { done.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(60 * time.Second):
		t.Error("not every client received every update within 60 s")
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	for _, c := range conns {
		c.Close()
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	q := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[int(p*float64(len(all)-1))]
	}
	t.Logf("interval %s, subscribers %d: held %d connections (connect+subscribe %s); %d updates delivered of %d; latency p50 %s p99 %s max %s; "+
		"heap+stack per connection %.1f KiB (server and client sides, both in this process); goroutines per connection %.1f",
		interval, n, held, connectTime.Round(time.Millisecond), len(all), n*events, q(0.50).Round(time.Microsecond),
		q(0.99).Round(time.Microsecond), q(1).Round(time.Microsecond), perConn/1024, goroutines)
	// Every client got the last event (conflation may merge earlier ones
	// under load; at these intervals it does not, so all n*events arrive).
	for i, l := range lat {
		if len(l) == 0 {
			t.Errorf("client %d received no update", i)
		}
	}
}

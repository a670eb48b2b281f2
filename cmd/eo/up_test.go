package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// TestUpIsTheWholeSystem runs `eo up` as make run does (a smaller world, a
// faster replay and schedule) and checks the system in motion: some match
// is live at every poll once the replay started, every status filter agrees
// with the unfiltered list, a WebSocket subscriber of a live match gets
// updates, and a snapshot holding live-landed events is published by the
// in-process jobs and served by the edge.
func TestUpIsTheWholeSystem(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole system for about a minute")
	}
	plans := filepath.Join(t.TempDir(), "plans.json")
	if err := os.WriteFile(plans, []byte(`{"standard": {"burst": 100000, "rate": 100000, "monthly_quota": 100000000}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EO_PLANS", plans)
	up := startUp(t, []string{access.PlanStandard, access.PlanInternal}, "--matches", "300",
		"--schedule", "@every 15s", "--live-speed", "10", "--live-matches", "2", "--land-every", "1s")
	base, storeDir, key, opKey := up.base, up.store, up.keys[0], up.keys[1]
	get := func(path, k string) ([]byte, int) { return up.get(t, path, k) }
	deadline := time.Now().Add(3 * time.Minute)
	type row struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	list := func(q string) []row {
		t.Helper()
		b, code := get("/v1/cs2/matches?limit=200"+q, key)
		var page struct {
			Data []row `json:"data"`
			Meta struct {
				NextCursor *string `json:"next_cursor"`
			} `json:"meta"`
		}
		if code != 200 || json.Unmarshal(b, &page) != nil {
			t.Fatalf("/matches%s: %d %s", q, code, b)
		}
		out := page.Data
		for page.Meta.NextCursor != nil {
			b, _ = get("/v1/cs2/matches?limit=200"+q+"&cursor="+*page.Meta.NextCursor, key)
			page.Meta.NextCursor, page.Data = nil, nil // a fresh slice: out holds the last one
			if err := json.Unmarshal(b, &page); err != nil {
				t.Fatal(err)
			}
			out = append(out, page.Data...)
		}
		return out
	}
	servedRe := regexp.MustCompile(`eo_snapshot_info\{[^}]*snapshot_id="([^"]+)"`)
	served := func() string {
		b, _ := get("/metrics", opKey)
		if m := servedRe.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		return ""
	}
	first := served()
	st, err := store.Open(context.Background(), storeDir, store.S3Options{})
	if err != nil {
		t.Fatal(err)
	}

	var ws *websocket.Conn
	var updates atomic.Int64
	liveSeen, polls := false, 0
	newSnapshot := ""
	for time.Now().Before(deadline) {
		polls++
		// A status list and the unfiltered list cannot be read at one
		// instant over HTTP: read the unfiltered list before and after the
		// status lists, and hold every match whose status did not change
		// in between to exact membership.
		before := list("")
		lists := map[string][]row{}
		for _, st := range []string{"scheduled", "live", "completed", "cancelled"} {
			lists[st] = list("&status=" + st)
		}
		after := list("")
		stable := map[string]string{}
		was := map[string]string{}
		for _, r := range before {
			was[r.ID] = r.Status
		}
		for _, r := range after {
			if was[r.ID] == r.Status {
				stable[r.ID] = r.Status
			}
		}
		if len(stable) < len(after)-4 {
			t.Fatalf("%d of %d matches changed status within one poll", len(after)-len(stable), len(after))
		}
		for st, rows := range lists {
			in := map[string]bool{}
			for _, r := range rows {
				if r.Status != st {
					t.Fatalf("?status=%s returned a %s row", st, r.Status)
				}
				in[r.ID] = true
			}
			for id, s := range stable {
				if (s == st) != in[id] {
					t.Fatalf("poll %d: match %s is %s throughout, yet ?status=%s has it: %v", polls, id, s, st, in[id])
				}
			}
		}
		live := list("&status=live")
		if len(live) > 0 {
			liveSeen = true
		} else if liveSeen {
			t.Fatalf("poll %d: no match is live", polls)
		}
		if ws == nil && len(live) > 0 {
			ws = subscribe(t, base, key, live[0].ID)
			go func() {
				for {
					_, msg, err := ws.ReadMessage()
					if err != nil {
						return
					}
					if strings.Contains(string(msg), `"type":"update"`) {
						updates.Add(1)
					}
				}
			}()
		}
		if newSnapshot == "" {
			if id := served(); id != "" && id != first {
				m, err := publish.ReadManifest(context.Background(), st, id)
				if err != nil {
					t.Fatal(err)
				}
				if hasLiveBatch(t, st, m) {
					newSnapshot = id
				}
			}
		}
		if newSnapshot != "" && liveSeen && updates.Load() > 0 && polls >= 10 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if newSnapshot == "" || !liveSeen || updates.Load() == 0 {
		t.Fatalf("after %d polls: snapshot with live events served %q, a match live %v, WebSocket updates %d",
			polls, newSnapshot, liveSeen, updates.Load())
	}
	// The edge's /metrics holds the in-process runs (the first, and the
	// scheduled one that published newSnapshot) and the WebSocket's frames.
	b, _ := get("/metrics", opKey)
	text := string(b)
	for series, atLeast := range map[string]float64{`eo_pipeline_runs_total{outcome="ok"}`: 2,
		`eo_pipeline_published_rows{table="matches"}`: 1, "eo_pipeline_last_success_timestamp_seconds": 1,
		"eo_pipeline_run_duration_seconds_count": 2, `eo_ws_frames_sent_total{type="update"}`: 1,
		`eo_ws_frames_sent_total{type="snapshot"}`: 1, "eo_ws_connections_total": 1} {
		if v, ok := proctest.MetricValue(text, series); !ok || v < atLeast {
			t.Errorf("/metrics: %s = %v (exported: %v), want at least %v", series, v, ok, atLeast)
		}
	}
	ws.Close()
}

// upStack is an `eo up` started by startUp.
type upStack struct {
	base, store, work string
	keys              []string // one per plan asked for, in order
}

// startUp runs `eo up` in this process, as make run does, on a fresh store
// and work folder and a free loopback port, with args after those, and
// returns once its edge answers /ready (a snapshot served); keys for plans are made before it
// starts. It is stopped when the test ends.
func startUp(t *testing.T, plans []string, args ...string) upStack {
	t.Helper()
	dir := t.TempDir()
	up := upStack{store: filepath.Join(dir, "store"), work: filepath.Join(dir, "work")}
	// Keys made before the edge starts (it reloads the key file anyway).
	up.keys = workKeys(t, up.work, plans...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	up.base = "http://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"up", "--store", up.store, "--work", up.work, "--addr", addr}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("eo up: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("eo up did not stop")
		}
	})
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if _, code := up.get(t, "/ready", ""); code == 200 {
			return up
		}
		select {
		case err := <-done:
			t.Fatalf("eo up stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the edge never answered /health")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// get reads path with key k (none when empty): the body and the status, 0
// when the request failed.
func (up upStack) get(t *testing.T, path, k string) ([]byte, int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, up.base+path, nil)
	if k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b, resp.StatusCode
}

// hasLiveBatch reports whether a snapshot was built from a batch the live
// lander wrote.
func hasLiveBatch(t *testing.T, st store.Store, m publish.Manifest) bool {
	t.Helper()
	bs, err := raw.ListBatches(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	built := m.Extra["raw_batches"]
	for _, b := range bs {
		if b.Source == "live" && strings.Contains(built, b.BatchID) {
			return true
		}
	}
	return false
}

func subscribe(t *testing.T, base, key, match string) *websocket.Conn {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/cs2/ws-token", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		Data struct {
			URL string `json:"url"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.Data.URL == "" {
		t.Fatalf("ws-token: %v", err)
	}
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+tok.Data.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"type":"subscribe","target":"match:%s"}`, match))); err != nil {
		t.Fatal(err)
	}
	return c
}

package access

import (
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/redistest"
	"github.com/eodata/eo/store"
)

// Fault 12: a hung Redis (SIGSTOP) held every metering call for 3-12 s
// (go-redis's default 3 s read timeout, three retries). Every call now fails
// within a short timeout, and after a few failures the breaker fails calls
// at once until its probe reaches Redis again. The same for a dead Redis
// (kill -9), restarted empty on its port.
func TestRedisFrozenFailsFast(t *testing.T) {
	srv := redistest.StartServer(t)
	r := openRedis(t, srv.URL, "t:")
	m := &Meter{C: r, Plans: DefaultPlans(), Now: time.Now}
	p := Principal{KeyID: "k", AccountID: "a", Plan: PlanInternal}
	if _, err := m.Check(ctx(), p, "GET /x", true); err != nil {
		t.Fatal(err)
	}
	for _, fault := range []string{"SIGSTOP", "kill -9"} {
		if fault == "SIGSTOP" {
			srv.Freeze()
		} else {
			srv.Kill()
		}
		before := readMeterMetrics(t, m)
		var last error
		for i := 0; i < 10; i++ {
			start := time.Now()
			_, err := m.Check(ctx(), p, "GET /x", true)
			if el := time.Since(start); err == nil || el > 2*time.Second {
				t.Fatalf("%s: call %d: %v after %s", fault, i, err, el)
			}
			last = err
		}
		// The breaker is open: calls are not even attempted.
		if !errors.Is(last, ErrUnavailable) {
			t.Fatalf("%s: after 10 failures the breaker should be open: %v", fault, last)
		}
		// Every failed check is a metering error; those attempted (before
		// the breaker opened) are timed as well, those it refused are not.
		after := readMeterMetrics(t, m)
		if after.backend != "redis" || after.errors != before.errors+10 || after.calls <= before.calls ||
			after.calls >= before.calls+10 {
			t.Fatalf("%s: metering metrics %+v after 10 failed checks, %+v before", fault, after, before)
		}
		if h := r.Health(); h.OK || !h.Required || h.Error == "" || h.Since.IsZero() {
			t.Fatalf("%s: health %+v", fault, h)
		}
		if fault == "SIGSTOP" {
			srv.Resume()
		} else {
			srv.Restart()
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := m.Check(ctx(), p, "GET /x", true); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: no recovery: %v", fault, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if h := r.Health(); !h.OK {
			t.Fatalf("%s: health after recovery %+v", fault, h)
		}
	}
}

// Several edges share one Redis: one source, one watermark. Two of them
// export at the same time while both record: every event is exported
// exactly once (the export lock, the announced batch) and pruned.
func TestRedisRacingExporters(t *testing.T) {
	url := redistest.Start(t)
	st := store.NewMemory()
	var edges []*Redis
	for i := 0; i < 2; i++ {
		r := openRedis(t, url, "eo:")
		edges = append(edges, r)
	}
	a, _ := edges[0].UsageSource(ctx())
	b, _ := edges[1].UsageSource(ctx())
	if a.ID == "" || a != b {
		t.Fatalf("edges on one Redis must share one source: %+v %+v", a, b)
	}
	want := map[string]bool{}
	var wg sync.WaitGroup
	var exportErr error
	var mu sync.Mutex
	for i, r := range edges {
		prefix := fmt.Sprintf("e%d", i)
		idSet(prefix, 3000, want)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 3000; j++ {
				_ = r.Record(ctx(), UsageEvent{Time: time.Now(), KeyID: "k", AccountID: "a", Endpoint: "GET /x", Status: 200,
					RequestID: fmt.Sprintf("%s-%06d", prefix, j)})
				if j%100 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	stop := proctest.Hammer(len(edges), func(i int) {
		if _, err := ExportUsage(ctx(), edges[i], st, 250); err != nil && !errors.Is(err, ErrExportBusy) {
			mu.Lock()
			exportErr = err
			mu.Unlock()
		}
	})
	time.Sleep(500 * time.Millisecond)
	stop()
	wg.Wait()
	if exportErr != nil {
		t.Fatal(exportErr)
	}
	for _, r := range edges {
		if _, err := ExportUsage(ctx(), r, st, 250); err != nil {
			t.Fatal(err)
		}
	}
	wantExactlyOnce(t, exportedIDs(t, st), want)
	if n, _ := edges[0].Client().XLen(ctx(), "eo:usage").Result(); n != 0 {
		t.Fatalf("%d exported entries left in the stream", n)
	}
}

// An emptied Redis (restarted without persistence) is a new source: its
// events are exported from its start, under their own watermark.
func TestRedisEmptiedIsNewSource(t *testing.T) {
	srv := redistest.StartServer(t)
	r := openRedis(t, srv.URL, "eo:")
	st := store.NewMemory()
	recordN(t, r, "before", 30)
	if n, err := ExportUsage(ctx(), r, st, 0); err != nil || n != 30 {
		t.Fatalf("%d %v", n, err)
	}
	s1, _ := r.UsageSource(ctx())
	if err := r.Client().FlushAll(ctx()).Err(); err != nil {
		t.Fatal(err)
	}
	recordN(t, r, "after", 20)
	if n, err := ExportUsage(ctx(), r, st, 0); err != nil || n != 20 {
		t.Fatalf("after FLUSHALL: %d %v", n, err)
	}
	if s2, _ := r.UsageSource(ctx()); s2.ID == s1.ID {
		t.Fatal("an emptied Redis kept its source id")
	}
	wantExactlyOnce(t, exportedIDs(t, st), idSet("after", 20, idSet("before", 30, nil)))
}

// A backlog of usage events built while Redis was frozen drains once it
// resumes, without flooding the stream. Before, the whole backlog went in
// one pipeline: over a link on which it cannot be written and answered
// within the call timeout (300 ms), Redis kept the part it had read and the
// client sent everything again every 100 ms, for ever (the stream grew by
// duplicates, the breaker kept opening, the buffer never drained). Here
// the client reaches Redis through a link of 8 MB/s: the 200,000 events
// are about 40 MB, a chunk of them 400 KB. A few transactions cut by the
// freeze may land twice (their EXEC sat in the socket while Redis was
// stopped); nothing more.
func TestRedisUsageBacklogDrainsAfterAnOutage(t *testing.T) {
	srv := redistest.StartServer(t)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	link := proctest.NewProxy(t, u.Host)
	link.Rate = 8 << 20
	u.Host = link.Addr
	r := openRedis(t, u.String(), "t:")
	const n = 200_000
	srv.Freeze()
	for i := range n {
		if err := r.Record(ctx(), UsageEvent{Time: time.Now(), KeyID: "k", AccountID: "a", Endpoint: "GET /x",
			Status: 200, RequestID: fmt.Sprint(i)}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	time.Sleep(time.Second) // flushes fail, the breaker opens
	if s := r.UsageStats(); s.Retained < n {
		t.Fatalf("while Redis is frozen: %+v retained, want the %d recorded", s, n)
	}
	srv.Resume()
	// Drained: the stream holds them all, and the client counts no event
	// as waiting or in flight beyond what the stream holds.
	var xlen int64
	if !proctest.Within(90*time.Second, 50*time.Millisecond, func() bool {
		xlen = r.c.XLen(ctx(), r.usageStream()).Val()
		return xlen >= n && r.UsageStats().Retained == xlen
	}) {
		t.Fatalf("the backlog did not drain: stream %d of %d events, %+v", xlen, n, r.UsageStats())
	}
	time.Sleep(time.Second)
	if again := r.c.XLen(ctx(), r.usageStream()).Val(); again != xlen || xlen > n+8*usageFlushChunk {
		t.Fatalf("the stream holds %d entries, then %d, for %d events", xlen, again, n)
	}
	if h := r.Health(); !h.OK {
		t.Fatalf("health after the drain: %+v", h)
	}
	t.Logf("%d events, %d stream entries", n, xlen)
}

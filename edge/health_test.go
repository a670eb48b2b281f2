package edge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/redistest"
)

// healthOf reads /ready: its status code and the counters check.
func healthOf(t *testing.T, ms *meteredServer) (int, string, map[string]any) {
	t.Helper()
	r := ms.get(t, "/ready", "-")
	body := r.json(t)
	checks, _ := body["checks"].(map[string]any)
	counters, _ := checks["counters"].(map[string]any)
	status, _ := body["status"].(string)
	return r.status, status, counters
}

// eventually retries cond for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !proctest.Within(d, 100*time.Millisecond, cond) {
		t.Fatalf("%s: not within %s", what, d)
	}
}

// Fault 12: with Redis hung (SIGSTOP) every keyed request blocked for
// seconds before its 503, and the probe stayed 200, so a load balancer kept
// sending traffic here. Now a hung or dead Redis gives fast 503s with
// Retry-After, /ready answers 503 naming the counters check, and both
// recover once Redis answers again.
func TestRedisFaultsFailFastAndShowInHealth(t *testing.T) {
	srv := redistest.StartServer(t)
	ms := meteredOn(t, openRedisCounters(t, srv.URL), nil)
	key := newTestKey(t, ms.keys, access.PlanInternal)
	if r := ms.get(t, "/v1/cs2/coverage", key); r.status != 200 {
		t.Fatalf("before the fault: %d %s", r.status, r.body)
	}
	if code, status, c := healthOf(t, ms); code != 200 || status != "ok" || c["ok"] != true {
		t.Fatalf("healthy: %d %s %v", code, status, c)
	}
	for _, fault := range []string{"SIGSTOP", "kill -9"} {
		t.Logf("fault: %s", fault)
		if fault == "SIGSTOP" {
			srv.Freeze()
		} else {
			srv.Kill()
		}
		for i := 0; i < 8; i++ {
			start := time.Now()
			res := ms.get(t, "/v1/cs2/coverage", key)
			if el := time.Since(start); el > 2*time.Second {
				t.Fatalf("%s: request %d took %s (a hung backend must fail fast)", fault, i, el)
			}
			if res.status != 503 || res.code(t) != "unavailable" || res.header.Get("Retry-After") == "" {
				t.Fatalf("%s: request %d: %d %v %s", fault, i, res.status, res.header, res.body)
			}
		}
		eventually(t, 5*time.Second, fault+": /ready 503 naming counters", func() bool {
			code, status, c := healthOf(t, ms)
			return code == 503 && status == "unavailable" && c["ok"] == false && c["error"] != "" && c["since"] != ""
		})
		if fault == "SIGSTOP" {
			srv.Resume()
		} else {
			srv.Restart()
		}
		eventually(t, 10*time.Second, fault+": recovery", func() bool {
			code, _, _ := healthOf(t, ms)
			return code == 200 && ms.get(t, "/v1/cs2/coverage", key).status == 200
		})
	}
}

// The embedded store's file cannot be written (a full disk; bbolt's size cap
// stands in for it): requests are still served and metered from memory, and
// /ready stays 200 but says "degraded", naming the counters check.
func TestEmbeddedWriteFailureDegradesHealth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counters.db")
	e, err := access.OpenEmbedded(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err = access.OpenEmbeddedWith(path, access.EmbeddedOptions{FlushInterval: 20 * time.Millisecond, MaxBytes: int(fi.Size())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ms := meteredOn(t, e, nil)
	acct, _ := ms.keys.CreateAccount("acme", 0)
	key, _, _ := ms.keys.CreateKey(acct.ID, access.PlanInternal)
	for i := 0; i < 3000; i++ {
		_ = e.Record(context.Background(), access.UsageEvent{Time: fixtureNow, KeyID: "k", AccountID: acct.ID, Endpoint: "GET /x",
			Status: 200, RequestID: fmt.Sprintf("%032x", i)})
	}
	eventually(t, 5*time.Second, "/ready degraded", func() bool {
		code, status, c := healthOf(t, ms)
		return code == 200 && status == "degraded" && c["ok"] == false && c["required"] == false && c["error"] != nil
	})
	if r := ms.get(t, "/v1/cs2/coverage", key); r.status != 200 || r.header.Get("X-Quota-Remaining") == "" {
		t.Fatalf("a metered request while counters.db cannot be written: %d %s", r.status, r.body)
	}
}

package access

import (
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/redistest"
)

// Usage events are buffered per instance: another instance sees them once
// they are flushed (within RedisUsageFlush), and Close flushes what is left.
func TestRedisUsageBatches(t *testing.T) {
	url := redistest.Start(t)
	a, err := OpenRedis(ctx(), url, "eo:")
	if err != nil {
		t.Fatal(err)
	}
	b := openRedis(t, url, "eo:")
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if err := a.Record(ctx(), UsageEvent{Time: t0.Add(time.Duration(i) * time.Second), KeyID: "k", AccountID: "acct",
			Endpoint: "GET /v1/{game}/matches", Status: 200, RequestID: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, _, err := b.ReadUsage(ctx(), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 3 {
			if evs[0].RequestID != "a" || evs[2].RequestID != "c" || !evs[1].Time.Equal(t0.Add(time.Second)) {
				t.Fatalf("events out of order or altered: %+v", evs)
			}
			break
		}
		if len(evs) > 3 || time.Now().After(deadline) {
			t.Fatalf("the other instance sees %d events, want 3", len(evs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Close writes what is still buffered.
	_ = a.Record(ctx(), UsageEvent{Time: t0, KeyID: "k", AccountID: "acct", Endpoint: "GET /x", Status: 429, RequestID: "d"})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	evs, _, err := b.ReadUsage(ctx(), "", 100)
	if err != nil || len(evs) != 4 || evs[3].Status != 429 {
		t.Fatalf("after Close: %d events %v", len(evs), err)
	}
}

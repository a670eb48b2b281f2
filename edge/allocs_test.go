package edge

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/snapshot"
)

// TestHotPathAllocs: a list page with a next cursor, through the whole
// middleware chain in memory, allocates nothing unmetered (the request's
// state is pooled), and at most the counter values the Counters interface
// returns when metered with the embedded backend (key lookup, bucket,
// quota, headers, usage event, cursor and page assembly: nothing),
// whether the page comes from the page cache or is assembled (the cache
// turned off). Counts, not timings:
// BenchmarkListMatches has the times.
func TestHotPathAllocs(t *testing.T) {
	const uri = "/v1/cs2/matches?limit=5"
	ts := newTestServer(t)
	keys, key := benchKeyring(t)
	counters, err := access.OpenEmbedded(filepath.Join(t.TempDir(), "counters.db"), time.Hour) // no flush during the count
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { counters.Close() })
	metered, err := New(Options{Snapshots: snapshot.Options{Store: fixtureStore(t), CacheDir: t.TempDir()}, Auth: keys,
		CursorSecret: []byte("test-secret"), Now: func() time.Time { return fixtureNow }, Logger: quietLog,
		Meter: &access.Meter{C: counters, Plans: benchPlans(), Accounts: keys, Now: time.Now}})
	if err != nil {
		t.Fatal(err)
	}
	if err := metered.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		im   *inMemory
		max  float64
	}{
		{"unmetered", newInMemory(ts.App(), uri, goodKey), 0},
		{"metered", newInMemory(metered.App(), uri, key), 1},
		{"unmetered, assembled", newInMemory(ts.App(), uri, goodKey), 0},
		{"metered, assembled", newInMemory(metered.App(), uri, key), 1},
	} {
		ts.noPageCache = strings.HasSuffix(tc.name, "assembled")
		metered.noPageCache = ts.noPageCache
		r := tc.im.do()
		if r.StatusCode() != fiber.StatusOK || !jsonHasNextCursor(r.Body()) {
			t.Fatalf("%s: %d %s", tc.name, r.StatusCode(), r.Body())
		}
		if n := testing.AllocsPerRun(200, func() { tc.im.do() }); n > tc.max {
			t.Errorf("%s: %v allocs per request, want at most %v", tc.name, n, tc.max)
		}
	}
}

func jsonHasNextCursor(b []byte) bool {
	return len(b) > 0 && !bytes.Contains(b, []byte(`"next_cursor":null`))
}

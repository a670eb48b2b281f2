package access

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	bolt "go.etcd.io/bbolt"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/redistest"
	"github.com/eodata/eo/store"
)

// exportedIDs reads every usage export file in st and counts each
// request_id: billing needs every event at least once, ideally exactly once.
func exportedIDs(t testing.TB, st store.Store) map[string]int {
	t.Helper()
	objs, err := st.List(ctx(), UsagePrefix)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, ".parquet") {
			continue
		}
		tbl := readExportFile(t, st, o.Key)
		col := tbl.Column(int(tbl.Schema().FieldIndices("request_id")[0]))
		for _, ch := range col.Data().Chunks() {
			s := ch.(*array.String)
			for i := 0; i < s.Len(); i++ {
				ids[s.Value(i)]++
			}
		}
		tbl.Release()
	}
	return ids
}

// readExportFile reads the usage export file at key in st (the caller
// releases the table).
func readExportFile(t testing.TB, st store.Store, key string) arrow.Table {
	t.Helper()
	b, err := store.GetBytes(ctx(), st, key)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(ctx())
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return tbl
}

func recordN(t testing.TB, c Counters, prefix string, n int) {
	t.Helper()
	now := time.Now().UTC()
	for i := 0; i < n; i++ {
		if err := c.Record(ctx(), UsageEvent{Time: now, KeyID: "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
			AccountID: "0196a1b2-c3d4-7e5f-8a9b-000000000001", Endpoint: "GET /v1/{game}/matches", Status: 200,
			RequestID: fmt.Sprintf("%s-%06d", prefix, i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// wantExactlyOnce checks that the export holds every one of want's ids once.
func wantExactlyOnce(t testing.TB, got map[string]int, want map[string]bool) {
	t.Helper()
	missing, dup := 0, 0
	for id := range want {
		switch n := got[id]; {
		case n == 0:
			missing++
		case n > 1:
			dup++
		}
	}
	if missing > 0 || dup > 0 || len(got) != len(want) {
		t.Fatalf("export: %d of %d events missing, %d duplicated, %d exported ids in all", missing, len(want), dup, len(got))
	}
}

func idSet(prefix string, n int, into map[string]bool) map[string]bool {
	if into == nil {
		into = map[string]bool{}
	}
	for i := 0; i < n; i++ {
		into[fmt.Sprintf("%s-%06d", prefix, i)] = true
	}
	return into
}

// Fault 7: the watermark counted positions in one counters.db; a new
// counters.db (deleted file, new host) starts its positions over, so its
// first events sat under the old watermark and were never exported.
func TestExportAfterNewCountersDB(t *testing.T) {
	st := store.NewMemory()
	path := filepath.Join(t.TempDir(), "counters.db")
	e, err := OpenEmbedded(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	recordN(t, e, "old", 150)
	if n, err := ExportUsage(ctx(), e, st, 0); err != nil || n != 150 {
		t.Fatalf("first export: %d %v", n, err)
	}
	e.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	e, err = OpenEmbedded(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	recordN(t, e, "new", 100)
	if n, err := ExportUsage(ctx(), e, st, 0); err != nil || n != 100 {
		t.Fatalf("export after a new counters.db: %d events, want 100 (%v)", n, err)
	}
	wantExactlyOnce(t, exportedIDs(t, st), idSet("new", 100, idSet("old", 150, nil)))
}

// Fault 7: two hosts (each its own counters.db) export to one store: neither
// may skip the other's events or overwrite the other's files.
func TestExportTwoHostsOneStore(t *testing.T) {
	st := store.NewMemory()
	a := openEmbedded(t, filepath.Join(t.TempDir(), "counters.db"), time.Hour)
	b := openEmbedded(t, filepath.Join(t.TempDir(), "counters.db"), time.Hour)
	recordN(t, a, "a", 120)
	recordN(t, b, "b", 80)
	for _, c := range []Counters{a, b, a, b} {
		if _, err := ExportUsage(ctx(), c, st, 50); err != nil {
			t.Fatal(err)
		}
	}
	wantExactlyOnce(t, exportedIDs(t, st), idSet("b", 80, idSet("a", 120, nil)))
}

// Fault 8: exported events were never deleted, so the counters database and
// the Redis stream grew with every request forever.
func TestUsagePrunedAfterExport(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		st := store.NewMemory()
		recordN(t, c, "x", 1000)
		if n, err := ExportUsage(ctx(), c, st, 300); err != nil || n != 1000 {
			t.Fatalf("export: %d %v", n, err)
		}
		evs, _, err := c.ReadUsage(ctx(), "", 10)
		if err != nil || len(evs) != 0 {
			t.Fatalf("%d exported events still kept after the export (%v)", len(evs), err)
		}
		if r, ok := c.(*Redis); ok {
			if n, err := r.Client().XLen(ctx(), "t:usage").Result(); err != nil || n != 0 {
				t.Fatalf("the Redis stream keeps %d exported entries (%v)", n, err)
			}
		}
		recordN(t, c, "y", 10)
		if n, err := ExportUsage(ctx(), c, st, 300); err != nil || n != 10 {
			t.Fatalf("export after the prune: %d %v", n, err)
		}
		wantExactlyOnce(t, exportedIDs(t, st), idSet("y", 10, idSet("x", 1000, nil)))
	})
}

// Fault 8: under sustained traffic with a periodic export the counters file
// stops growing (bbolt reuses the pages of pruned events).
func TestEmbeddedFileStaysFlat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counters.db")
	e := openEmbedded(t, path, time.Hour)
	st := store.NewMemory()
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	var after3 int64
	for cycle := 1; cycle <= 12; cycle++ {
		recordN(t, e, fmt.Sprintf("c%d", cycle), 20000)
		if n, err := ExportUsage(ctx(), e, st, 0); err != nil || n != 20000 {
			t.Fatalf("cycle %d: export %d %v", cycle, n, err)
		}
		if cycle == 3 {
			after3 = size()
		}
	}
	if end := size(); end > after3 {
		t.Fatalf("counters.db grew from %d bytes after 3 export cycles to %d after 12", after3, end)
	}
}

// The disk under counters.db fills up (bbolt's MaxSize stands in for it):
// requests keep being metered from memory, the events wait in memory, and
// once there is room again every one of them is written.
func TestEmbeddedFlushFailureKeepsEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counters.db")
	e := openEmbedded(t, path, time.Hour)
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	reopen(t, e, int(fi.Size())) // the disk is full: the file cannot grow
	now := time.Now()
	recordN(t, e, "full", 5000)
	for i := 0; i < 50; i++ {
		if r, err := e.Consume(ctx(), now, []Counter{{Key: "q:month:a", Limit: 1 << 30}}); err != nil || !r.OK {
			t.Fatalf("metering must go on while the flush fails: %+v %v", r, err)
		}
	}
	if err := e.Flush(); err == nil {
		t.Fatal("the flush should fail on a full disk")
	}
	if h := e.Health(); h.OK || h.Required || h.Error == "" {
		t.Fatalf("a failing flush must show in Health (degraded, not required): %+v", h)
	}
	reopen(t, e, 0) // room again
	if err := e.Flush(); err != nil {
		t.Fatalf("flush after the disk has room: %v", err)
	}
	if h := e.Health(); !h.OK {
		t.Fatalf("health after recovery: %+v", h)
	}
	evs, _, err := e.ReadUsage(ctx(), "", 100000)
	if err != nil || len(evs) != 5000 {
		t.Fatalf("%d of 5000 events survived the failed flush (%v)", len(evs), err)
	}
	if v, _ := e.Get(ctx(), now, []string{"q:month:a"}); v[0] != 50 {
		t.Fatalf("counter %d, want 50", v[0])
	}
}

// reopen reopens e's bbolt file with maxSize (0: no limit), as a disk that
// fills up or gets room again. e's flush loop must be idle (a long interval).
func reopen(t *testing.T, e *Embedded, maxSize int) {
	t.Helper()
	path := e.db.Path()
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := openBolt(path, maxSize)
	if err != nil {
		t.Fatal(err)
	}
	e.db = db
}

// failingStore fails Puts of keys with a prefix while fail is set.
type failingStore struct {
	store.Store
	mu     sync.Mutex
	prefix string
	fail   int // fail this many more Puts of prefix (-1: all)
}

func (f *failingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	f.mu.Lock()
	fail := f.fail != 0 && strings.HasPrefix(key, f.prefix)
	if fail && f.fail > 0 {
		f.fail--
	}
	f.mu.Unlock()
	if fail {
		return errors.New("store unreachable")
	}
	return f.Store.Put(ctx, key, r, size)
}

func (f *failingStore) set(prefix string, n int) {
	f.mu.Lock()
	f.prefix, f.fail = prefix, n
	f.mu.Unlock()
}

// An export that stops after writing a file but before advancing the
// watermark is redone exactly: the same events to the same file, even when
// more events arrived in between. No loss, no duplicate.
func TestExportRedoneAfterFailure(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		st := store.NewMemory()
		recordN(t, c, "a", 70)
		// Puts: the announcement of the first batch, its file, then the
		// advance of the watermark, which fails.
		if _, err := ExportUsage(ctx(), c, &onceFailing{Store: st, failAt: 3, puts: new(int)}, 50); err == nil {
			t.Fatal("the export should fail")
		}
		if got := len(exportedIDs(t, st)); got != 50 {
			t.Fatalf("first attempt wrote %d events", got)
		}
		recordN(t, c, "b", 40)
		n, err := ExportUsage(ctx(), c, st, 50)
		if err != nil || n != 110 {
			t.Fatalf("redo: %d %v", n, err)
		}
		wantExactlyOnce(t, exportedIDs(t, st), idSet("b", 40, idSet("a", 70, nil)))
	})
}

// onceFailing fails its failAt-th Put (1-based).
type onceFailing struct {
	store.Store
	failAt int
	puts   *int
}

func (o *onceFailing) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	*o.puts++
	if *o.puts == o.failAt {
		return errors.New("store unreachable")
	}
	return o.Store.Put(ctx, key, r, size)
}

// While the export fails (store down), events are kept up to the cap; past
// it new events are dropped, counted and refused with ErrUsageFull, and the
// requests themselves are unaffected. Once the export works, every kept
// event is exported and pruned, and there is room again.
func TestRetainedCapWhileExportFails(t *testing.T) {
	for _, name := range []string{"embedded", "redis"} {
		t.Run(name, func(t *testing.T) {
			var c Counters
			if name == "embedded" {
				e, err := OpenEmbeddedWith(filepath.Join(t.TempDir(), "c.db"), EmbeddedOptions{FlushInterval: 10 * time.Millisecond, MaxRetainedEvents: 100})
				if err != nil {
					t.Fatal(err)
				}
				c = e
			} else {
				r, err := OpenRedisWith(ctx(), redistest.Start(t), "t:", RedisOptions{MaxRetainedEvents: 100})
				if err != nil {
					t.Fatal(err)
				}
				c = r
			}
			defer c.Close()
			st := &failingStore{Store: store.NewMemory()}
			st.set("", -1) // the store is down
			kept := 0
			for i := 0; i < 150; i++ {
				err := c.Record(ctx(), UsageEvent{Time: time.Now(), KeyID: "k", AccountID: "a", Endpoint: "GET /x", Status: 200,
					RequestID: fmt.Sprintf("r-%06d", i)})
				switch {
				case err == nil:
					kept++
				case !errors.Is(err, ErrUsageFull):
					t.Fatal(err)
				}
				if i%10 == 9 {
					// let Redis's buffer reach the stream, so its length is seen
					if _, _, err := c.ReadUsage(ctx(), "", 1); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := ExportUsage(ctx(), c, st, 0); err == nil {
				t.Fatal("export to a store that is down should fail")
			}
			s := c.(StatsReporter).UsageStats()
			if kept < 100 || kept > 110 || s.Dropped != uint64(150-kept) || s.Cap != 100 {
				t.Fatalf("kept %d, stats %+v: want the cap (100) kept and the rest dropped and counted", kept, s)
			}
			st.set("", 0) // the store is back
			n, err := ExportUsage(ctx(), c, st, 0)
			if err != nil || n != kept {
				t.Fatalf("export after the outage: %d of %d (%v)", n, kept, err)
			}
			if s := c.(StatsReporter).UsageStats(); s.Retained != 0 {
				t.Fatalf("after the export: %+v", s)
			}
			if err := c.Record(ctx(), UsageEvent{Time: time.Now(), RequestID: "after"}); err != nil {
				t.Fatalf("room again after the export: %v", err)
			}
		})
	}
}

// A counters.db from before usage sources, with JSON-encoded events and the
// old store-wide watermark: the watermark is adopted when it can be this
// database's (at or before its last event), else the database is exported
// from its start.
func TestLegacyCountersDB(t *testing.T) {
	for _, tc := range []struct {
		name   string
		legacy string
		want   int
	}{{"own watermark", "150", 50}, {"another database's watermark", "5000", 200}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "counters.db")
			db, err := openBolt(path, 0)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				_, _ = tx.CreateBucketIfNotExists(bucketCounters)
				u, _ := tx.CreateBucketIfNotExists(bucketUsage)
				for i := 0; i < 200; i++ {
					seq, _ := u.NextSequence()
					var k [8]byte
					binary.BigEndian.PutUint64(k[:], seq)
					v, _ := json.Marshal(UsageEvent{Time: time.Now().UTC(), KeyID: "k", AccountID: "a", Endpoint: "GET /x",
						Status: 200, RequestID: fmt.Sprintf("old-%06d", i)})
					_ = u.Put(k[:], v)
				}
				return nil
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			// A local store: the old watermark is a file where a folder of
			// per-source watermarks could not be.
			st, err := store.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := store.PutBytes(ctx(), st, usageLegacyWatermark, []byte(tc.legacy)); err != nil {
				t.Fatal(err)
			}
			e, err := OpenEmbedded(path, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if src, _ := e.UsageSource(ctx()); src.LegacyUpTo != "200" || !strings.HasPrefix(src.ID, "db-") {
				t.Fatalf("source of a legacy database: %+v", src)
			}
			n, err := ExportUsage(ctx(), e, st, 0)
			if err != nil || n != tc.want {
				t.Fatalf("exported %d, want %d (%v)", n, tc.want, err)
			}
			if s := e.UsageStats(); s.Retained != 0 {
				t.Fatalf("legacy events not pruned: %+v", s)
			}
			// The source id survives a reopen; a new database gets another.
			src, _ := e.UsageSource(ctx())
			e.Close()
			e2, _ := OpenEmbedded(path, time.Hour)
			if src2, _ := e2.UsageSource(ctx()); src2 != src {
				t.Fatalf("source changed on reopen: %+v -> %+v", src, src2)
			}
			e2.Close()
		})
	}
}

// The compact event encoding round-trips every field, packed or not.
func TestUsageCodec(t *testing.T) {
	for _, ev := range []UsageEvent{
		{Time: time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC), KeyID: "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
			AccountID: "0196a1b2-c3d4-7e5f-8a9b-000000000001", Endpoint: "GET /v1/{game}/matches/{id}/maps", Status: 200,
			RequestID: "00112233445566778899aabbccddeeff"},
		{Time: time.Unix(0, 0).UTC(), KeyID: "K-not-a-uuid", AccountID: "", Endpoint: "", Status: 0, RequestID: "abc"},
		{Time: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), KeyID: "0196A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B", Status: 503, RequestID: "ABCD"},
		// Almost packable: one byte off in the last group or digit.
		{Time: time.Unix(2, 0).UTC(), KeyID: "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5g", AccountID: "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5B",
			Endpoint: "00112233445566778899aabbccddeefg", RequestID: "00112233445566778899aabbccddeeF0"},
		{Time: time.Unix(1, 0).UTC(), KeyID: "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5", RequestID: "0"},
	} {
		b := appendEvent(nil, ev)
		got, err := decodeEvent(b)
		if err != nil || got != ev {
			t.Fatalf("round trip:\n got %+v %v\nwant %+v", got, err, ev)
		}
		// Records follow each other in a chunk: eventLen finds where
		// one ends, and no truncated record passes for a whole one.
		if n, err := eventLen(append(b, 1, 2, 3)); err != nil || n != len(b) {
			t.Fatalf("eventLen = %d, %v; want %d", n, err, len(b))
		}
		for i := range len(b) {
			if n, err := eventLen(b[:i]); err == nil {
				t.Fatalf("eventLen of a %d-byte prefix of a %d-byte record = %d", i, len(b), n)
			}
		}
	}
	ev := UsageEvent{Time: time.Now().UTC(), KeyID: "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		AccountID: "0196a1b2-c3d4-7e5f-8a9b-000000000001", Endpoint: "GET /v1/{game}/matches", Status: 200,
		RequestID: "00112233445566778899aabbccddeeff"}
	j, _ := json.Marshal(ev)
	if b := appendEvent(nil, ev); len(b) > 100 {
		t.Fatalf("encoded event: %d bytes (JSON %d)", len(b), len(j))
	}
	if got, err := decodeEvent(j); err != nil || !got.Time.Equal(ev.Time) || got.RequestID != ev.RequestID {
		t.Fatalf("legacy JSON: %+v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {9}, {1}, {1, 2, 0}, {1, 2, 0, 1, 3}} {
		if _, err := decodeEvent(bad); err == nil {
			t.Fatalf("%v decoded", bad)
		}
	}
}

// The encodings remembered for repeated fields follow the text, not the
// address: a string whose bytes are reused for another value (as a pooled
// request buffer's are) is encoded again.
func TestUsageCodecRepeatedFields(t *testing.T) {
	buf := []byte("0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
	aliased := unsafe.String(&buf[0], len(buf))
	for _, next := range []string{"0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "ffffffff-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		"not-a-uuid-but-just-as-long-as-one-x", "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"} {
		copy(buf, next)
		for range 3 {
			ev := UsageEvent{Time: time.Unix(5, 0).UTC(), KeyID: aliased, AccountID: aliased, Endpoint: aliased, RequestID: aliased}
			got, err := decodeEvent(appendEvent(nil, ev))
			if err != nil || got.KeyID != next || got.AccountID != next || got.Endpoint != next || got.RequestID != next {
				t.Fatalf("after the bytes changed to %q: %+v %v", next, got, err)
			}
		}
	}
}

// Two keys whose strings share a slot, used in turn, are encoded right and
// do not allocate on every event (the slot changes hands on one miss in
// takeOver, not on each).
func TestUsageCodecSharedSlot(t *testing.T) {
	slotOf := func(s string) uintptr {
		return (uintptr(unsafe.Pointer(unsafe.StringData(s))) >> 4) % uintptr(len(repeatedFields.slots))
	}
	seen := map[uintptr]string{}
	var a, b string
	for i := 0; a == ""; i++ {
		k := strings.Clone(fmt.Sprintf("0196a1b2-c3d4-7e5f-8a9b-%012x", i))
		if prev, ok := seen[slotOf(k)]; ok {
			a, b = prev, k
		}
		seen[slotOf(k)] = k
	}
	var rec [192]byte
	for range 100 {
		for _, k := range []string{a, b} {
			got, err := decodeEvent(appendEvent(rec[:0], UsageEvent{Time: time.Unix(5, 0).UTC(), KeyID: k, RequestID: "ab"}))
			if err != nil || got.KeyID != k {
				t.Fatalf("key %s decoded as %+v %v", k, got, err)
			}
		}
	}
	allocs := testing.AllocsPerRun(2000, func() {
		for _, k := range []string{a, b} {
			_ = appendEvent(rec[:0], UsageEvent{Time: time.Unix(5, 0).UTC(), KeyID: k, RequestID: "ab"})
		}
	})
	// Taking the slot over on every miss would be 3 allocations an event.
	if allocs >= 2 {
		t.Fatalf("%.1f allocations a pair of events", allocs)
	}
}

// BenchmarkAppendEvent: encoding the usage event of a request (the
// request path's share of recording it), with a key, account and endpoint
// that repeat and a request id that does not.
func BenchmarkAppendEvent(b *testing.B) {
	ev := UsageEvent{Time: time.Now().UTC(), KeyID: "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		AccountID: "0196a1b2-c3d4-7e5f-8a9b-000000000001", Endpoint: "GET /v1/{game}/matches", Status: 200,
		RequestID: "00112233445566778899aabbccddeeff"}
	var rec [192]byte
	b.ReportAllocs()
	for b.Loop() {
		_ = appendEvent(rec[:0], ev)
	}
}

// The backend's and the exporter's metrics: retained, dropped, exported.
func TestUsageMetrics(t *testing.T) {
	e, err := OpenEmbeddedWith(filepath.Join(t.TempDir(), "c.db"), EmbeddedOptions{FlushInterval: time.Hour, MaxRetainedEvents: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	x := NewUsageExporter(e, store.NewMemory(), time.Hour, nil)
	for i := 0; i < 12; i++ {
		_ = e.Record(ctx(), UsageEvent{Time: time.Now(), RequestID: fmt.Sprint(i)})
	}
	get := func() map[string]float64 {
		out, err := proctest.Values(Metrics(e, x)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	m := get()
	if m["eo_usage_events_retained"] != 10 || m["eo_usage_events_dropped_total"] != 2 || m["eo_counters_up"] != 1 ||
		m["eo_usage_events_retained_cap"] != 10 {
		t.Fatalf("before the export: %v", m)
	}
	if n, err := x.Once(ctx()); err != nil || n != 10 {
		t.Fatalf("export: %d %v", n, err)
	}
	m = get()
	if m["eo_usage_events_retained"] != 0 || m["eo_usage_exported_events_total"] != 10 ||
		m["eo_usage_export_last_success_timestamp_seconds"] < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Fatalf("after the export: %v", m)
	}
}

// Under heavy traffic the exporter does not wait for its interval once the
// backlog reaches EarlyAt.
func TestExporterExportsEarly(t *testing.T) {
	defer func(d time.Duration) { earlyCheck = d }(earlyCheck)
	earlyCheck = 20 * time.Millisecond
	e := openEmbedded(t, filepath.Join(t.TempDir(), "c.db"), 10*time.Millisecond)
	st := store.NewMemory()
	x := NewUsageExporter(e, st, time.Hour, nil)
	x.EarlyAt = 100
	c, cancel := context.WithCancel(ctx())
	defer cancel()
	go x.Run(c)
	recordN(t, e, "a", 50)
	time.Sleep(200 * time.Millisecond)
	if n := len(exportedIDs(t, st)); n != 0 {
		t.Fatalf("exported %d events below EarlyAt", n)
	}
	recordN(t, e, "b", 60)
	deadline := time.Now().Add(5 * time.Second)
	for len(exportedIDs(t, st)) != 110 {
		if time.Now().After(deadline) {
			t.Fatalf("no early export: %d events exported", len(exportedIDs(t, st)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// copyFile copies the file at from to to (a closed bbolt database: a backup).
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A counters.db restored from an older copy keeps its source id but counts
// its positions again from where the copy stopped. The export pruned the
// events recorded since under the source's watermark as if they were the
// ones exported there: a work folder copied for a benchmark lost 2 million
// events that way, without a log line. Every event must be exported; the
// copy's own events, exported before, may be exported twice (same
// request_id), and a copy that matches what was exported changes nothing.
func TestRestoredCountersDBLosesNoEvents(t *testing.T) {
	for _, tc := range []struct {
		name     string
		backupAt string // "a": after the a events; "ab": after a and b, before their export
		after    int    // c events recorded after the restore
		renewed  bool
	}{
		{name: "restored, nothing since", backupAt: "a", after: 0, renewed: true},
		{name: "restored, past the watermark since", backupAt: "a", after: 120, renewed: true},
		{name: "restored, under the watermark since", backupAt: "a", after: 30, renewed: true},
		{name: "copy of what was exported", backupAt: "ab", after: 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.NewMemory()
			dir := t.TempDir()
			path, backup := filepath.Join(dir, "counters.db"), filepath.Join(dir, "backup.db")
			e := openEmbedded(t, path, time.Hour)
			recordN(t, e, "a", 50)
			if tc.backupAt == "a" {
				e.Close()
				copyFile(t, path, backup)
				e = openEmbedded(t, path, time.Hour)
			}
			recordN(t, e, "b", 50)
			if tc.backupAt == "ab" {
				e.Close()
				copyFile(t, path, backup)
				e = openEmbedded(t, path, time.Hour)
			}
			if n, err := ExportUsage(ctx(), e, st, 40); err != nil || n != 100 {
				t.Fatalf("first export: %d %v", n, err)
			}
			src, _ := e.UsageSource(ctx())
			e.Close()
			copyFile(t, backup, path)
			e = openEmbedded(t, path, time.Hour)
			defer e.Close()
			recordN(t, e, "c", tc.after)
			if _, err := ExportUsage(ctx(), e, st, 40); err != nil {
				t.Fatal(err)
			}
			got := exportedIDs(t, st)
			want := idSet("c", tc.after, idSet("b", 50, idSet("a", 50, nil)))
			for id := range want {
				n := got[id]
				switch {
				case n == 0:
					t.Fatalf("event %s was not exported (%d of %d ids exported)", id, len(got), len(want))
				case n > 1 && !(tc.renewed && strings.HasPrefix(id, "a-") && n == 2):
					t.Fatalf("event %s exported %d times", id, n)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d ids exported, want %d", len(got), len(want))
			}
			now, _ := e.UsageSource(ctx())
			if renewed := now.ID != src.ID; renewed != tc.renewed {
				t.Fatalf("source %s then %s: renewed %v, want %v", src.ID, now.ID, renewed, tc.renewed)
			}
			// The next export starts where this one stopped, under the new source.
			recordN(t, e, "d", 10)
			if n, err := ExportUsage(ctx(), e, st, 40); err != nil || n != 10 {
				t.Fatalf("next export: %d events (%v), want 10", n, err)
			}
		})
	}
}

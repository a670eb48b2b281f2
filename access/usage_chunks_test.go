package access

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/eodata/eo/store"
)

// TestUsageChunks: events stored one per key (before chunks) and in chunks
// of usageChunkMax read back as one sequence with per-event positions:
// paging by any page size, ranges that start and end inside a chunk, a
// prune that cuts a chunk in two, and the retained count after a reopen.
func TestUsageChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counters.db")
	// 10 events the way earlier versions wrote them: one V1 record a key.
	db, err := openBolt(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketCounters); err != nil {
			return err
		}
		u, err := tx.CreateBucketIfNotExists(bucketUsage)
		if err != nil {
			return err
		}
		for i := 1; i <= 10; i++ {
			seq, _ := u.NextSequence()
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], seq)
			if err := u.Put(k[:], appendEvent(nil, UsageEvent{Time: now, KeyID: "k", AccountID: "a",
				Endpoint: "GET /x", Status: 200, RequestID: fmt.Sprintf("r%05d", i)})); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	e, err := OpenEmbedded(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	record := func(from, to int) {
		for i := from; i <= to; i++ {
			if err := e.Record(ctx(), UsageEvent{Time: now, KeyID: "k", AccountID: "a", Endpoint: "GET /x",
				Status: 200, RequestID: fmt.Sprintf("r%05d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	record(11, 1210) // chunks of 512, 512 and 176 at positions 11, 523 and 1035
	// want checks that events (first..last) come back in order with
	// matching positions.
	want := func(what string, evs []UsageEvent, last string, first, to int) {
		t.Helper()
		if len(evs) != to-first+1 {
			t.Fatalf("%s: %d events, want %d", what, len(evs), to-first+1)
		}
		for i, ev := range evs {
			if id := fmt.Sprintf("r%05d", first+i); ev.RequestID != id {
				t.Fatalf("%s: event %d is %s, want %s", what, i, ev.RequestID, id)
			}
		}
		if last != strconv.Itoa(to) {
			t.Fatalf("%s: last position %s, want %d", what, last, to)
		}
	}
	evs, last, err := e.ReadUsage(ctx(), "", 5000)
	if err != nil {
		t.Fatal(err)
	}
	want("all", evs, last, 1, 1210)
	for _, page := range []int{1, 7, 511, 512, 513} {
		var got []UsageEvent
		pos := ""
		for {
			evs, next, err := e.ReadUsage(ctx(), pos, page)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			got, pos = append(got, evs...), next
		}
		want(fmt.Sprintf("pages of %d", page), got, pos, 1, 1210)
	}
	evs, last, err = e.ReadUsageRange(ctx(), "100", "600", 5000)
	if err != nil {
		t.Fatal(err)
	}
	want("range 101-600", evs, last, 101, 600)

	// Prune through the middle of the second chunk.
	if n, err := e.PruneUsage(ctx(), "700"); err != nil || n != 700 {
		t.Fatalf("prune: %d %v, want 700", n, err)
	}
	if s := e.UsageStats(); s.Retained != 510 {
		t.Fatalf("retained after prune: %d, want 510", s.Retained)
	}
	evs, last, _ = e.ReadUsage(ctx(), "", 5000)
	want("after prune", evs, last, 701, 1210)
	evs, last, _ = e.ReadUsage(ctx(), "699", 3)
	want("from a pruned position", evs, last, 701, 703)
	e.Close()
	if e, err = OpenEmbedded(path, time.Hour); err != nil {
		t.Fatal(err)
	}
	if s := e.UsageStats(); s.Retained != 510 {
		t.Fatalf("retained after reopen: %d, want 510", s.Retained)
	}
	record(1211, 1215)
	evs, last, _ = e.ReadUsage(ctx(), "1208", 100)
	want("across the last flush", evs, last, 1209, 1215)
	if n, err := e.PruneUsage(ctx(), "1215"); err != nil || n != 515 {
		t.Fatalf("prune all: %d %v, want 515", n, err)
	}
	if evs, _, _ := e.ReadUsage(ctx(), "", 100); len(evs) != 0 {
		t.Fatalf("%d events after pruning all", len(evs))
	}
}

// BenchmarkEmbeddedFlush: recording a usage event and writing it to
// counters.db with the next flush (4,000 events a flush: 200 ms at 20k
// requests/s), per event.
func BenchmarkEmbeddedFlush(b *testing.B) {
	e, err := OpenEmbedded(filepath.Join(b.TempDir(), "counters.db"), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ev := UsageEvent{Time: time.Now().UTC(), KeyID: "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		AccountID: "0196a1b2-c3d4-7e5f-8a9b-000000000001", Endpoint: "GET /v1/{game}/matches", Status: 200,
		RequestID: "0123456789abcdef0123456789abcdef"}
	const batch = 4000
	b.ReportAllocs()
	for b.Loop() {
		for range batch {
			if err := e.Record(ctx(), ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := e.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/event")
}

// BenchmarkExportUsage: exporting usage events from counters.db to a
// Parquet file in a store (memory) and pruning them, per event, one full
// export batch (DefaultExportBatch events) an iteration. An edge serving a
// metered request per event pays this beside the request.
func BenchmarkExportUsage(b *testing.B) {
	e, err := OpenEmbedded(filepath.Join(b.TempDir(), "counters.db"), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	st := store.NewMemory()
	const n = DefaultExportBatch
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		now := time.Now().UTC()
		for i := range n {
			ev := UsageEvent{Time: now.Add(time.Duration(i) * time.Microsecond), KeyID: "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
				AccountID: "0196a1b2-c3d4-7e5f-8a9b-000000000001", Endpoint: "GET /v1/{game}/matches", Status: 200,
				RequestID: fmt.Sprintf("3f9a1c2b7d4e%010x%010x", 1000+i%64, 1+i/64)} // as the edge assigns them: its prefix, the connection (64), the request's number on it
			if err := e.Record(ctx(), ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := e.Flush(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if got, err := ExportUsage(ctx(), e, st, 0); err != nil || got != n {
			b.Fatalf("export: %d %v", got, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	objs, err := st.List(ctx(), UsagePrefix)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, o := range objs {
		size += o.Size
	}
	b.ReportMetric(float64(size)/float64(b.N*n), "file-bytes/event")
}

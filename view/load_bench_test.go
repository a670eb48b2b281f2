package view

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSnapshotLoad loads a published snapshot folder (a big world is
// not embedded in the tests: make one with `eo generate` and `eo pipeline
// run`, then EO_BENCH_SNAPSHOT=<store>/snapshots/<id>) and reports the live
// heap it keeps and the CPU the load took, besides the wall time:
//
//	EO_BENCH_SNAPSHOT=$T/store/snapshots/<id> go test ./view -run '^$' -bench SnapshotLoad -benchtime 1x
func BenchmarkSnapshotLoad(b *testing.B) {
	dir := os.Getenv("EO_BENCH_SNAPSHOT")
	if dir == "" {
		b.Skip("EO_BENCH_SNAPSHOT (a snapshot folder) is not set")
	}
	var man struct {
		SnapshotID string `json:"snapshot_id"`
		Tables     []struct {
			Name string `json:"name"`
			File string `json:"file"`
		} `json:"tables"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &man); err != nil {
		b.Fatal(err)
	}
	m := Meta{ID: man.SnapshotID}
	for _, t := range man.Tables {
		m.Tables = append(m.Tables, t.Name)
		if t.File != "" && t.File != t.Name+".parquet" {
			if m.Files == nil {
				m.Files = map[string]string{}
			}
			m.Files[t.Name] = t.File
		}
	}
	var cpu time.Duration
	var heap uint64
	for b.Loop() {
		var r0, r1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		s, err := Load(context.Background(), dir, m)
		if err != nil {
			b.Fatal(err)
		}
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		cpu += time.Duration(r1.Utime.Nano() - r0.Utime.Nano() + r1.Stime.Nano() - r0.Stime.Nano())
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = ms.HeapAlloc
		runtime.KeepAlive(s)
		runtime.GC()
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
}

package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// gather reads collectors (proctest.Values).
func gather(t *testing.T, cs []prometheus.Collector) map[string]float64 {
	t.Helper()
	m, err := proctest.Values(cs...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// publishFails fails every write under snapshots/ while on: the pipeline
// runs, its publish fails.
type publishFails struct {
	store.Store
	on atomic.Bool
}

func (s *publishFails) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if s.on.Load() && strings.HasPrefix(key, "snapshots/") {
		return errors.New("store refuses the write")
	}
	return s.Store.Put(ctx, key, r, size)
}

// Every run is counted by outcome; a published run sets the rows of each
// table, the quarantined lines by entity and the last success time; a
// failed one is timed but leaves them as the last success set them.
func TestRunMetrics(t *testing.T) {
	ctx := context.Background()
	st := &publishFails{Store: store.NewMemory()}
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	r := NewRunner(Options{Pipeline: pipelines.Options{Store: st, WorkDir: t.TempDir()}, Now: func() time.Time { return at }})
	if m := gather(t, r.Collectors()); m[`eo_pipeline_runs_total{outcome="ok"}`] != 0 ||
		len(m) != 9 || m["eo_pipeline_last_success_timestamp_seconds"] != 0 || m["eo_pipeline_run_in_progress_seconds"] != 0 {
		t.Fatalf("before any run: %v", m)
	}
	if _, err := r.RunOnce(ctx); !errors.Is(err, pipelines.ErrNoBatches) {
		t.Fatal(err)
	}
	landFixture(t, st, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC))
	// A batch with a broken _batch.json: quarantined as one _batch line.
	bad := raw.BatchesPrefix + "20250311T000000.000Z-0badba/" + raw.BatchManifestName
	if err := store.PutBytes(ctx, st, bad, []byte(`{"batch_id":`)); err != nil {
		t.Fatal(err)
	}
	res, err := r.RunOnce(ctx)
	if err != nil || res.Skipped {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := r.RunOnce(ctx); err != nil { // nothing new: skipped
		t.Fatal(err)
	}
	m := gather(t, r.Collectors())
	want := map[string]float64{
		`eo_pipeline_runs_total{outcome="ok"}`: 1, `eo_pipeline_runs_total{outcome="skipped"}`: 2,
		`eo_pipeline_runs_total{outcome="failed"}`: 0, "eo_pipeline_run_duration_seconds_count": 1,
		"eo_pipeline_last_success_timestamp_seconds":    float64(at.Unix()),
		`eo_pipeline_quarantined_rows{entity="_batch"}`: 1,
		`eo_pipeline_run_modes_total{mode="full"}`:      1, `eo_pipeline_run_modes_total{mode="incremental"}`: 0,
	}
	for _, tb := range res.Manifest.Tables {
		want[fmt.Sprintf(`eo_pipeline_published_rows{table=%q}`, tb.Name)] = float64(tb.Rows)
	}
	if len(res.Manifest.Tables) != len(pipelines.PublishedTables) || res.Manifest.Tables[0].Rows == 0 {
		t.Fatalf("manifest tables: %+v", res.Manifest.Tables)
	}
	for entity := range res.Report.Quarantined {
		want[fmt.Sprintf(`eo_pipeline_quarantined_rows{entity=%q}`, entity)] = float64(sumReasons(res.Report.Quarantined[entity]))
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (exported %v), want %v", k, got, ok, v)
		}
	}
	if m["eo_pipeline_run_duration_seconds_sum"] <= 0 {
		t.Errorf("run duration sum %v", m["eo_pipeline_run_duration_seconds_sum"])
	}

	// A failed run: counted and timed; the last success stands.
	st.on.Store(true)
	landFixture(t, st, time.Date(2025, 3, 11, 0, 0, 0, 0, time.UTC))
	at = at.Add(time.Hour)
	if _, err := r.RunOnce(ctx); err == nil {
		t.Fatal("the publish was refused, yet the run succeeded")
	}
	m = gather(t, r.Collectors())
	if m[`eo_pipeline_runs_total{outcome="failed"}`] != 1 || m["eo_pipeline_run_duration_seconds_count"] != 2 ||
		m["eo_pipeline_last_success_timestamp_seconds"] != want["eo_pipeline_last_success_timestamp_seconds"] ||
		m[`eo_pipeline_published_rows{table="matches"}`] != want[`eo_pipeline_published_rows{table="matches"}`] {
		t.Errorf("after a failed run: %v", m)
	}
}

func sumReasons(reasons map[string]int) int {
	n := 0
	for _, c := range reasons {
		n += c
	}
	return n
}

// A run refused because another is in progress is a skipped run.
func TestBusyRunIsSkipped(t *testing.T) {
	r := newTestRunner(t, store.NewMemory())
	r.mu.Lock()
	_, err := r.RunOnce(context.Background())
	r.mu.Unlock()
	if m := gather(t, r.Collectors()); !errors.Is(err, ErrBusy) || m[`eo_pipeline_runs_total{outcome="skipped"}`] != 1 ||
		m["eo_pipeline_run_duration_seconds_count"] != 0 {
		t.Fatalf("%v: %v", err, m)
	}
}

package snapshot

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eodata/eo/internal/scrape"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/view"
)

// metrics are the keeper's Prometheus metrics (Keeper.Collectors).
type metrics struct {
	info      *prometheus.GaugeVec
	createdAt atomic.Int64 // the served snapshot's creation, unix nanoseconds (0: none)
	reloads   prometheus.Counter
	rejected  prometheus.Counter
	// bytes counts the bytes of fetched snapshots' tables by where they
	// came from (publish.FetchStats): the store, or a snapshot already in
	// the local cache.
	bytes *prometheus.CounterVec
}

func newMetrics() metrics {
	return metrics{
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eo_snapshot_info", Help: "The snapshot being served (value 1), by id and pipeline version.",
		}, []string{"snapshot_id", "pipeline_version", "schema_version"}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eo_snapshot_reload_failures_total", Help: "Snapshot reloads that failed (the last good snapshot kept serving).",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eo_snapshot_rejected_total", Help: "Snapshots rejected as corrupt although their checksums matched (not served, removed from the local cache).",
		}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eo_snapshot_fetch_bytes_total", Help: "Bytes of the fetched snapshots' tables, by source: store (downloaded), cache (the same bytes linked from a snapshot already cached: an incremental run changes a few tables).",
		}, []string{"source"}),
	}
}

// Collectors are the keeper's metrics: the snapshot served and its age,
// the reloads that failed, the snapshots rejected and the bytes fetched.
func (k *Keeper) Collectors() []prometheus.Collector {
	m := &k.metrics
	age := scrape.Gauge("eo_snapshot_age_seconds", "Seconds since the served snapshot was created.", func() float64 {
		ns := m.createdAt.Load()
		if ns == 0 {
			return 0
		}
		return time.Since(time.Unix(0, ns)).Seconds()
	})
	return []prometheus.Collector{m.info, age, m.reloads, m.rejected, m.bytes}
}

func (m *metrics) loaded(s *view.Snapshot) {
	m.info.Reset()
	m.info.WithLabelValues(s.ID, s.Meta.PipelineVersion, strconv.Itoa(s.Meta.SchemaVersion)).Set(1)
	m.createdAt.Store(s.CreatedAt.UnixNano())
}

// fetched counts a fetch's bytes by where they came from.
func (m *metrics) fetched(st publish.FetchStats) {
	m.bytes.WithLabelValues("store").Add(float64(st.Downloaded))
	m.bytes.WithLabelValues("cache").Add(float64(st.Reused))
}

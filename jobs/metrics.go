package jobs

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eodata/eo/internal/scrape"
	"github.com/eodata/eo/pipelines"
)

// Outcomes of a run, the outcome label of eo_pipeline_runs_total.
const (
	OutcomeOK      = "ok"      // the pipeline ran and its snapshot was published
	OutcomeFailed  = "failed"  // the pipeline or the publish failed
	OutcomeSkipped = "skipped" // nothing new landed, no batch at all, or a run was in progress
)

// runMetrics are the Prometheus metrics of a Runner's runs (Collectors):
// eo jobs serves them on its own listener, eo up on the edge's /metrics.
type runMetrics struct {
	runs        *prometheus.CounterVec
	modes       *prometheus.CounterVec
	duration    prometheus.Histogram
	rows        *prometheus.GaugeVec
	quarantined *prometheus.GaugeVec
	lastSuccess prometheus.Gauge
	inProgress  prometheus.GaugeFunc
}

func newRunMetrics(running func() time.Duration) *runMetrics {
	m := &runMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eo_pipeline_runs_total",
			Help: "Pipeline runs by outcome: ok (published), failed, skipped (nothing new landed, no batch, or a run in progress).",
		}, []string{"outcome"}),
		modes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eo_pipeline_run_modes_total",
			Help: "Published runs by mode: full (every batch; the first run, --full, or a batch an incremental run cannot take: the log says why) or incremental (the new batches only).",
		}, []string{"mode"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "eo_pipeline_run_duration_seconds",
			Help:    "Duration of the runs that ran the pipeline (ok or failed; skipped runs are not observed).",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200},
		}),
		rows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eo_pipeline_published_rows",
			Help: "Rows of each table in the snapshot the last ok run published.",
		}, []string{"table"}),
		quarantined: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eo_pipeline_quarantined_rows",
			Help: "Raw lines (files, batches) the last ok run quarantined, by entity (entity _batch: skipped batches); an incremental run counts its new batches' lines only.",
		}, []string{"entity"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eo_pipeline_last_success_timestamp_seconds",
			Help: "When a run last published a snapshot, unix seconds (0: not since start).",
		}),
		inProgress: scrape.Gauge("eo_pipeline_run_in_progress_seconds",
			"How long the run in progress has been running (0: none); a run past its time limit (EO_RUN_TIMEOUT) is stopped.",
			func() float64 { return running().Seconds() }),
	}
	for _, o := range []string{OutcomeOK, OutcomeFailed, OutcomeSkipped} {
		m.runs.WithLabelValues(o) // every outcome is exported from the start, at 0
	}
	for _, mode := range []string{pipelines.ModeFull, pipelines.ModeIncremental} {
		m.modes.WithLabelValues(mode)
	}
	return m
}

// outcome classifies a RunOnce result.
func outcome(res Result, err error) string {
	switch {
	case errors.Is(err, ErrBusy), errors.Is(err, pipelines.ErrNoBatches):
		return OutcomeSkipped
	case err != nil:
		return OutcomeFailed
	case res.Skipped:
		return OutcomeSkipped
	}
	return OutcomeOK
}

// record counts a finished RunOnce that took d and ended at now.
func (m *runMetrics) record(res Result, err error, d time.Duration, now time.Time) {
	o := outcome(res, err)
	m.runs.WithLabelValues(o).Inc()
	if o == OutcomeSkipped {
		return
	}
	m.duration.Observe(d.Seconds())
	if o != OutcomeOK {
		return
	}
	m.lastSuccess.Set(float64(now.Unix()))
	m.modes.WithLabelValues(res.Report.Mode).Inc()
	m.rows.Reset()
	for _, t := range res.Manifest.Tables {
		m.rows.WithLabelValues(t.Name).Set(float64(t.Rows))
	}
	m.quarantined.Reset()
	for entity, reasons := range res.Report.Quarantined {
		n := 0
		for _, c := range reasons {
			n += c
		}
		m.quarantined.WithLabelValues(entity).Set(float64(n))
	}
}

// Collectors are the runner's metrics, to register on a Prometheus
// registry: eo_pipeline_runs_total{outcome}, eo_pipeline_run_modes_total{mode},
// eo_pipeline_run_duration_seconds, eo_pipeline_published_rows{table},
// eo_pipeline_quarantined_rows{entity},
// eo_pipeline_last_success_timestamp_seconds and
// eo_pipeline_run_in_progress_seconds.
func (r *Runner) Collectors() []prometheus.Collector {
	m := r.metrics
	return []prometheus.Collector{m.runs, m.modes, m.duration, m.rows, m.quarantined, m.lastSuccess, m.inProgress}
}

package access

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eodata/eo/internal/gcpace"
	"github.com/eodata/eo/internal/scrape"
	"github.com/eodata/eo/internal/tick"
	"github.com/eodata/eo/store"
)

// UsageExporter runs ExportUsage periodically while the edge serves and
// keeps the outcome for /ready (the "usage_export" check: not required,
// the edge serves on while the store is down) and /metrics.
//
// It exports every `every`, and sooner when the backend holds EarlyAt
// events (checked every second): under heavy traffic the backlog, and
// so counters.db or the Redis stream, stays near EarlyAt events instead of
// growing with the request rate times the interval.
type UsageExporter struct {
	// EarlyAt is the retained-event count that triggers an export before
	// the interval ends (default DefaultExportEarlyAt; negative: never).
	EarlyAt int64
	// Duty is the share of one processor's time an export may take
	// (default DefaultExportDuty; 1 or more: as fast as it can). An export
	// that finds the backlog past behindFactor x EarlyAt runs unpaced, so
	// a pace too slow for the request rate cannot let the backlog grow to
	// the retained-event cap.
	Duty float64

	log   UsageLog
	st    store.Store
	every time.Duration
	batch int
	lg    *slog.Logger

	health      *healthState
	exported    atomic.Uint64
	failures    atomic.Uint64
	lastSuccess atomic.Int64 // unix seconds of the last successful run (0: none yet)
}

// NewUsageExporter exports l's events to st every `every`.
func NewUsageExporter(l UsageLog, st store.Store, every time.Duration, lg *slog.Logger) *UsageExporter {
	if lg == nil {
		lg = slog.Default()
	}
	return &UsageExporter{log: l, st: st, every: every, lg: lg, health: newHealthState(false)}
}

// DefaultExportEarlyAt is UsageExporter.EarlyAt's default: one export
// file's worth of events (DefaultExportBatch). With the export paced
// (Duty), a file's worth keeps each run short and counters.db small.
const DefaultExportEarlyAt = DefaultExportBatch

// DefaultExportDuty is UsageExporter.Duty's default: a quarter of a
// processor leaves the export several times the processor time it needs at
// a busy edge's rate (BenchmarkExportUsage measures an event's cost).
const DefaultExportDuty = 0.25

// behindFactor x EarlyAt is the backlog past which an export runs unpaced.
const behindFactor = 10

// earlyCheck is how often Run compares the backlog with EarlyAt (a
// variable for tests). A second: UsageStats is a few atomic loads.
var earlyCheck = time.Second

// Run exports every interval, or sooner past EarlyAt, until ctx ends.
func (x *UsageExporter) Run(ctx context.Context) {
	early := x.early()
	stats, _ := x.log.(StatsReporter)
	every := min(x.every, earlyCheck)
	last := time.Now()
	// Once logs and records its failures (health, metrics): nothing more
	// to do with them here; the next run exports what this one did not.
	tick.Every(ctx, every, func(ctx context.Context) error {
		due := time.Since(last) >= x.every-every/2
		if !due && early > 0 && stats != nil && stats.UsageStats().Retained >= early {
			due = true
		}
		if !due {
			return nil
		}
		_, err := x.Once(ctx)
		last = time.Now()
		return err
	}, func(error) {})
}

// Once runs one export and records its outcome.
func (x *UsageExporter) Once(ctx context.Context) (int, error) {
	start := time.Now()
	// An export makes garbage for every event (Parquet page buffers,
	// decoded strings): a collector cycle every batch or two at a small heap.
	defer gcpace.Relax()()
	n, err := exportUsage(ctx, x.log, x.st, x.batch, newPacer(x.duty()), x.lg)
	x.exported.Add(uint64(n))
	switch {
	case errors.Is(err, ErrExportBusy):
		x.lg.Debug("usage export: another edge is exporting this source")
		return n, nil
	case err != nil:
		if ctx.Err() != nil {
			return n, err
		}
		x.failures.Add(1)
		x.health.set(err)
		x.lg.Error("usage export failed: events stay in the counters backend (up to the retained-event cap) and are exported by the next run",
			"err", err, "exported", n)
		return n, err
	}
	x.lastSuccess.Store(time.Now().Unix())
	if x.health.set(nil) {
		x.lg.Info("usage export succeeds again")
	}
	if n > 0 {
		x.lg.Info("usage exported", "events", n, "elapsed", time.Since(start).Round(time.Millisecond).String())
	}
	return n, nil
}

// early is x.EarlyAt or its default.
func (x *UsageExporter) early() int64 {
	if x.EarlyAt == 0 {
		return DefaultExportEarlyAt
	}
	return x.EarlyAt
}

// duty is the pace of the next export: x.Duty, or none when the backlog is
// behindFactor x EarlyAt or more.
func (x *UsageExporter) duty() float64 {
	d := x.Duty
	if d == 0 {
		d = DefaultExportDuty
	}
	early := x.early()
	if s, ok := x.log.(StatsReporter); ok && early > 0 && s.UsageStats().Retained >= behindFactor*early {
		return 1
	}
	return d
}

// Health is the last run's outcome (not required).
func (x *UsageExporter) Health() Health { return x.health.get() }

// Metrics are the counters backend's and the exporter's Prometheus metrics
// (x may be nil).
func Metrics(c Counters, x *UsageExporter) []prometheus.Collector {
	var out []prometheus.Collector
	if h, ok := c.(HealthReporter); ok {
		out = append(out, scrape.Gauge("eo_counters_up", "1 while the counters backend is reachable and written (Redis: the circuit breaker is closed; embedded: the last flush succeeded).", func() float64 {
			if h.Health().OK {
				return 1
			}
			return 0
		}))
	}
	if r, ok := c.(*Redis); ok {
		out = append(out,
			scrape.Counter("eo_counters_breaker_opens_total", "Times the Redis circuit breaker opened (metered requests then fail fast with 503).", scrape.Float(r.br.opened.Load)),
			scrape.Counter("eo_counters_errors_total", "Failed Redis calls and probes.", scrape.Float(r.br.failures.Load)))
	}
	if s, ok := c.(StatsReporter); ok {
		out = append(out,
			scrape.Gauge("eo_usage_events_retained", "Usage events waiting for export (written to the counters backend or buffered).", func() float64 { return float64(s.UsageStats().Retained) }),
			scrape.Gauge("eo_usage_events_retained_cap", "The retained-event cap (0: none); at the cap new usage events are dropped.", func() float64 { return float64(s.UsageStats().Cap) }),
			scrape.Counter("eo_usage_events_dropped_total", "Usage events dropped because the retained-event cap or the buffer was full.", func() float64 { return float64(s.UsageStats().Dropped) }))
	}
	if x != nil {
		out = append(out,
			scrape.Counter("eo_usage_exported_events_total", "Usage events exported to the store by this process.", scrape.Float(x.exported.Load)),
			scrape.Counter("eo_usage_export_failures_total", "Usage export runs that failed.", scrape.Float(x.failures.Load)),
			scrape.Gauge("eo_usage_export_last_success_timestamp_seconds", "When a usage export run last succeeded (0: not yet).", scrape.Float(x.lastSuccess.Load)))
	}
	return out
}

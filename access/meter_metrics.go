package access

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// meterMetrics time the Meter's calls to its counters backend (the bucket
// and quota check of every metered request, the sandbox allowance read)
// and count the failed ones. A histogram with fixed buckets and a counter,
// both labelled with the backend once: a request updates atomics only.
type meterMetrics struct {
	latency prometheus.Histogram
	errors  prometheus.Counter
	// sampled: the latency of one call in timeSample is recorded (the
	// embedded backend, whose check is so cheap that timing every call
	// would cost a large part of it). Errors are always counted.
	sampled bool
}

// timeSample is the sampling of the embedded backend's latency.
const timeSample = 16

// BackendName names a counters backend in metrics: "embedded", "redis", or
// "other" (a test double).
func BackendName(c Counters) string {
	switch c.(type) {
	case *Embedded:
		return "embedded"
	case *Redis:
		return "redis"
	}
	return "other"
}

func newMeterMetrics(backend string) *meterMetrics {
	labels := prometheus.Labels{"backend": backend}
	return &meterMetrics{
		sampled: backend == "embedded",
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "eo_metering_duration_seconds",
			Help: "Latency of the metering calls to the counters backend (bucket and quota check; sandbox allowance read); one call in 16 is timed on the embedded backend, every call on Redis. Calls refused at once by the open Redis breaker are not timed.",
			Buckets: []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25,
				.5, 1},
			ConstLabels: labels,
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "eo_metering_errors_total",
			Help:        "Metering calls that failed (the request was answered 503), including those refused at once while the Redis breaker is open.",
			ConstLabels: labels,
		}),
	}
}

// metrics returns the meter's metrics, made on first use.
func (m *Meter) metrics() *meterMetrics {
	m.metricsOnce.Do(func() { m.met = newMeterMetrics(BackendName(m.C)) })
	return m.met
}

// startTimer starts timing a metering call: now, or the zero time when
// this call's latency is not sampled.
func (m *Meter) startTimer() time.Time {
	if m.metrics().sampled && rand.Uint32()%timeSample != 0 {
		return time.Time{}
	}
	return time.Now()
}

// observe records a metering call that started at t0 (zero: not timed)
// and ended with err.
func (m *Meter) observe(t0 time.Time, err error) {
	mm := m.metrics()
	if err != nil {
		mm.errors.Inc()
		if errors.Is(err, ErrUnavailable) {
			return // not attempted: no latency to speak of
		}
	}
	if !t0.IsZero() {
		mm.latency.Observe(time.Since(t0).Seconds())
	}
}

// Collectors are the meter's metrics, to register on a Prometheus
// registry (the edge serves them on /metrics):
// eo_metering_duration_seconds{backend} and eo_metering_errors_total{backend}.
func (m *Meter) Collectors() []prometheus.Collector {
	mm := m.metrics()
	return []prometheus.Collector{mm.latency, mm.errors}
}

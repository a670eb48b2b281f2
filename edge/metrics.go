package edge

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/eodata/eo/internal/scrape"
)

// metrics are the operator metrics served at /metrics in Prometheus text
// format (client_golang: a well-kept exposition implementation).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// exports counts the files handed over by /exports/{table}, by table
	// and how (edge/exports.go); exportBytes the bytes streamed.
	exports     *prometheus.CounterVec
	exportBytes prometheus.Counter
	// acceptErrs counts failed accepts (edge/conns.go).
	acceptErrs atomic.Uint64
	// pageCacheHits and pageCacheMisses count the list requests served
	// from the view's page cache and those assembled (edge/pagecache.go).
	pageCacheHits, pageCacheMisses atomic.Uint64
	// changesSnapshot and changesLive count the entries /changes served,
	// by where they came from; changesExpired the cursors answered 410
	// (edge/changes.go).
	changesSnapshot, changesLive, changesExpired atomic.Uint64
	// routes caches the vectors' children per route (*routeMetrics): after
	// a route's first request, a request finds its latency observer and
	// status counter with one lock-free load keyed by the route's string,
	// instead of hashing labels under the vectors' locks.
	routes sync.Map
}

// routeMetrics are one route's children of the request vectors.
type routeMetrics struct {
	latency prometheus.Observer
	// codes holds the route's counter for each status code below 600, made
	// on first use; two requests racing store the same child.
	codes [600]atomic.Pointer[codeCounter]
}

type codeCounter struct{ prometheus.Counter }

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "eo_http_requests_total", Help: "HTTP requests by route and status code.",
	}, []string{"route", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "eo_http_request_duration_seconds", Help: "HTTP request latency by route, of one request in 8 chosen at random (eo_http_requests_total counts every request).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
	}, []string{"route"})
	m.reg.MustRegister(
		scrape.Counter("eo_page_cache_hits_total", "List requests answered from the served view's page cache (package pagecache).", scrape.Float(m.pageCacheHits.Load)),
		scrape.Counter("eo_page_cache_misses_total", "Cacheable list requests assembled from the view (the first of their page on a view).", scrape.Float(m.pageCacheMisses.Load)))
	for _, src := range []struct {
		name string
		n    *atomic.Uint64
	}{{"snapshot", &m.changesSnapshot}, {"live", &m.changesLive}} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "eo_changes_entries_total", Help: "Entries served by /changes, by source: snapshot (the served snapshot's change log), live (this edge's live changes).",
			ConstLabels: prometheus.Labels{"source": src.name},
		}, scrape.Float(src.n.Load)))
	}
	m.reg.MustRegister(scrape.Counter("eo_changes_expired_total", "/changes cursors older than the change history kept (answered 410 cursor_expired: the client resyncs).", scrape.Float(m.changesExpired.Load)))
	m.exports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "eo_exports_total",
		Help: "Export files handed over, by table and how: presigned (a redirect to the object store), streamed (from this instance), not_modified (304).",
	}, []string{"table", "handover"})
	m.exportBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "eo_export_streamed_bytes_total", Help: "Bytes of export files streamed by this instance (not the presigned ones).",
	})
	m.reg.MustRegister(m.requests, m.latency, m.exports, m.exportBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// registerConns exports the connection gauges (read when scraped).
func (m *metrics) registerConns(open func() float64, max int) {
	m.reg.MustRegister(
		scrape.Gauge("eo_http_connections", "HTTP connections being served (WebSocket ones are counted by eo_ws_connections).", open),
		scrape.Gauge("eo_http_connections_max", "HTTP connections served at once; one more is answered 503 and closed.", func() float64 { return float64(max) }),
		scrape.Counter("eo_accept_errors_total", "Failed accepts (out of file descriptors, ...); the listener backs off and retries.", scrape.Float(m.acceptErrs.Load)),
	)
}

// changesServed counts the entries of a /changes page.
func (m *metrics) changesServed(es []changeEntry) {
	for i := range es {
		if es[i].source == "live" {
			m.changesLive.Add(1)
		} else {
			m.changesSnapshot.Add(1)
		}
	}
}

// latencySample: one request in latencySample has its latency observed. A
// histogram's counts are shared by every core, and observing every request
// made them the most contended memory of a request; a uniform sample keeps
// the distribution and its quantiles.
const latencySample = 8

// sampled reports whether this request's latency is to be observed.
func sampled() bool { return rand.Uint32()%latencySample == 0 }

// observe counts a finished request under its route pattern (never the raw
// path, which would explode label cardinality) and status code and, when
// its latency was sampled (timed), observes d.
func (m *metrics) observe(route string, code int, timed bool, d time.Duration) {
	r, ok := m.routes.Load(route)
	if !ok {
		r, _ = m.routes.LoadOrStore(route, &routeMetrics{latency: m.latency.WithLabelValues(route)})
	}
	rm := r.(*routeMetrics)
	if timed {
		rm.latency.Observe(d.Seconds())
	}
	if code < 0 || code >= len(rm.codes) {
		m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
		return
	}
	cc := rm.codes[code].Load()
	if cc == nil {
		cc = &codeCounter{m.requests.WithLabelValues(route, strconv.Itoa(code))}
		rm.codes[code].Store(cc)
	}
	cc.Inc()
}

func (m *metrics) handler(c *fiber.Ctx) error {
	mfs, err := m.reg.Gather()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	c.Set(fiber.HeaderContentType, string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	return c.Send(buf.Bytes())
}

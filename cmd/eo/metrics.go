package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveMetrics serves GET /metrics (Prometheus text format) with cs and the
// process's Go and process collectors on addr until ctx ends: eo jobs'
// metrics listener (EO_JOBS_METRICS_ADDR), which has no edge to serve them.
// It needs no key, so keep addr private (a loopback or cluster-internal
// address). A listen failure fails the command at start.
func serveMetrics(ctx context.Context, log *slog.Logger, addr string, cs []prometheus.Collector) (net.Addr, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("metrics listener", "addr", "http://"+ln.Addr().String()+"/metrics")
	return ln.Addr(), nil
}

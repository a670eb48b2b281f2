// Package scrape makes the Prometheus metrics whose value is read when
// they are scraped: a counter or a gauge with its name and help, from a
// function (an atomic counter's Load through Float).
package scrape

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Counter is a counter whose value is read from value at every scrape.
func Counter(name, help string, value func() float64) prometheus.CounterFunc {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, value)
}

// Gauge is a gauge whose value is read from value at every scrape.
func Gauge(name, help string, value func() float64) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, value)
}

// Float reads load as a float64: scrape.Float(n.Load) for an atomic
// counter n.
func Float[T ~int | ~int32 | ~int64 | ~uint32 | ~uint64](load func() T) func() float64 {
	return func() float64 { return float64(load()) }
}

// Package scrape makes the Prometheus metrics whose value is read when
// they are scraped: a counter or a gauge with its name and help, from a
// function (an atomic counter's Load through Float); and reads collectors'
// values back as a flat map (Values), for tests.
package scrape

import (
	"fmt"
	"sort"
	"strings"

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

// Values gathers cs on a registry of their own and returns every series as
// `name{label="value",...}` (labels sorted; the bare name when it has
// none) → value; a histogram as name_count and name_sum (its labels
// before the suffix).
func Values(cs ...prometheus.Collector) (map[string]float64, error) {
	reg := prometheus.NewRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[name] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[name] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[name+"_count"] = float64(m.Histogram.GetSampleCount())
				out[name+"_sum"] = m.Histogram.GetSampleSum()
			}
		}
	}
	return out, nil
}

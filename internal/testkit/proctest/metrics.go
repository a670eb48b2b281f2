package proctest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricValue reads one sample of a Prometheus text exposition (the series
// as written, e.g. `eo_ws_frames_sent_total{type="update"}`); false when it
// is absent.
func MetricValue(text, series string) (float64, bool) {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
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

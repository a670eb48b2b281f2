package proctest

import (
	"strconv"
	"strings"
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

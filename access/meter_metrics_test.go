package access

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// meterSample is what the meter's metrics say: the latency histogram's
// count and the errors counter, with their backend label.
type meterSample struct {
	backend string
	calls   uint64 // observations of eo_metering_duration_seconds
	errors  float64
}

func readMeterMetrics(t *testing.T, m *Meter) meterSample {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var s meterSample
	seen := 0
	for _, mf := range mfs {
		mt := mf.GetMetric()[0]
		for _, l := range mt.GetLabel() {
			if l.GetName() == "backend" {
				s.backend = l.GetValue()
			}
		}
		switch mf.GetName() {
		case "eo_metering_duration_seconds":
			s.calls = mt.GetHistogram().GetSampleCount()
			seen++
		case "eo_metering_errors_total":
			s.errors = mt.GetCounter().GetValue()
			seen++
		}
	}
	if seen != 2 {
		t.Fatalf("the meter exports %d of its 2 metrics", seen)
	}
	return s
}

// Metering calls are timed under their backend's name (on the embedded
// backend one in timeSample, at random); none failed.
func TestMeterMetricsEmbedded(t *testing.T) {
	e := openEmbedded(t, filepath.Join(t.TempDir(), "counters.db"), time.Hour)
	m := &Meter{C: e, Plans: DefaultPlans(), Now: time.Now}
	if s := readMeterMetrics(t, m); s != (meterSample{backend: "embedded"}) {
		t.Fatalf("before any call: %+v", s)
	}
	const n = 2000
	p := Principal{KeyID: "k", AccountID: "a", Plan: PlanStandard}
	for i := 0; i < n-1; i++ {
		if _, err := m.Check(ctx(), p, "GET /x", true); err != nil {
			t.Fatal(err)
		}
	}
	sb := Principal{KeyID: "s", AccountID: "a", Plan: PlanSandbox}
	if _, _, err := m.SandboxExhausted(ctx(), sb); err != nil {
		t.Fatal(err)
	}
	// n/timeSample = 125 expected; the bounds are 6 standard deviations out.
	s := readMeterMetrics(t, m)
	if s.backend != "embedded" || s.errors != 0 || s.calls < 60 || s.calls > 190 {
		t.Fatalf("after %d calls: %+v, want about %d timed and no error", n, s, n/timeSample)
	}
}

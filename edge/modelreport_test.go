package edge

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/eodata/eo/access"
)

// TestModelReportPlans: the model review report is served, as HTML, to an
// internal-plan key only; a standard key gets 403 forbidden and draws no
// quota (refused before metering), a sandbox key 403 sandbox_scope.
func TestModelReportPlans(t *testing.T) {
	ms := planServer(t, access.PlanStandard, access.PlanLimits{Burst: 100, Rate: 100, MonthlyQuota: 100})
	internal := newTestKey(t, ms.keys, access.PlanInternal)
	standard := newTestKey(t, ms.keys, access.PlanStandard)
	sandbox := newTestKey(t, ms.keys, access.PlanSandbox)

	r := ms.get(t, "/v1/cs2/model/report", internal)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("internal key: %d %q", r.status, r.header.Get("Content-Type"))
	}
	want, ok := ms.View().ModelReport()
	if !ok || string(r.body) != string(want) {
		t.Fatalf("internal key: the body (%d bytes) is not the snapshot's report (%d bytes, %v)", len(r.body), len(want), ok)
	}
	for _, s := range []string{"<!doctype html>", "eo_model review", "Against the closing market line and Elo", "</html>"} {
		if !strings.Contains(string(r.body), s) {
			t.Errorf("the report lacks %q", s)
		}
	}

	remaining := func() string {
		return ms.get(t, "/v1/cs2/coverage", standard).header.Get("X-Quota-Remaining")
	}
	before := remaining()
	for range 3 {
		if r := ms.get(t, "/v1/cs2/model/report", standard); r.status != 403 || r.code(t) != "forbidden" ||
			!strings.Contains(r.json(t)["error"].(map[string]any)["message"].(string), "internal") {
			t.Fatalf("standard key: %d %s", r.status, r.body)
		}
	}
	if after := remaining(); before == "" || after != mustDecrement(t, before) {
		t.Errorf("quota remaining %s then %s: the refused requests drew quota", before, after)
	}
	if r := ms.get(t, "/v1/cs2/model/report", sandbox); r.status != 403 || r.code(t) != "sandbox_scope" {
		t.Errorf("sandbox key: %d %s", r.status, r.body)
	}
	if r := ms.get(t, "/v1/cs2/model/report?limit=5", internal); r.status != 400 || r.code(t) != "invalid_parameter" {
		t.Errorf("a query parameter: %d %s", r.status, r.body)
	}
}

// mustDecrement is the quota remaining after one more metered request.
func mustDecrement(t *testing.T, s string) string {
	t.Helper()
	var n int
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		t.Fatalf("X-Quota-Remaining %q", s)
	}
	b, _ := json.Marshal(n - 1)
	return string(b)
}

// TestModelMetricsComparison: /model/metrics carries the review, next to
// the metrics it kept: the three forecasters on the same matches, the paired
// differences on the baselines only, reliability counts and months that add
// up to the compared matches, intervals around their values.
func TestModelMetricsComparison(t *testing.T) {
	ts := newTestServer(t)
	r := ts.get(t, "/v1/cs2/model/metrics")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var body struct {
		Data []struct {
			Market         string  `json:"market"`
			Brier          float64 `json:"brier"`
			SettledMatches int     `json:"settled_matches"`
			Comparison     *struct {
				EvaluatedFrom  string `json:"evaluated_from"`
				SettledMatches int    `json:"settled_matches"`
				Forecasters    []struct {
					Forecaster     string   `json:"forecaster"`
					SettledMatches int      `json:"settled_matches"`
					Brier          float64  `json:"brier"`
					Low            float64  `json:"brier_ci_low"`
					High           float64  `json:"brier_ci_high"`
					Diff           *float64 `json:"model_brier_diff"`
				} `json:"forecasters"`
				Reliability []struct {
					Forecaster string  `json:"forecaster"`
					Forecasts  int     `json:"forecasts"`
					Observed   float64 `json:"observed"`
					Low        float64 `json:"observed_ci_low"`
					High       float64 `json:"observed_ci_high"`
				} `json:"reliability"`
				Monthly []struct {
					Forecaster     string `json:"forecaster"`
					SettledMatches int    `json:"settled_matches"`
				} `json:"monthly"`
			} `json:"comparison"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || len(body.Data) != 1 {
		t.Fatalf("%v: %s", err, r.body)
	}
	m := body.Data[0]
	if m.Market != "match_winner" || m.SettledMatches == 0 || m.Brier == 0 {
		t.Fatalf("the metrics fields: %+v", m)
	}
	c := m.Comparison
	if c == nil || c.SettledMatches == 0 || c.EvaluatedFrom == "" {
		t.Fatalf("no comparison: %s", r.body)
	}
	if c.SettledMatches > m.SettledMatches {
		t.Errorf("compared %d of %d settled matches", c.SettledMatches, m.SettledMatches)
	}
	var names []string
	for _, f := range c.Forecasters {
		names = append(names, f.Forecaster)
		if f.SettledMatches != c.SettledMatches || !(f.Low <= f.Brier && f.Brier <= f.High) {
			t.Errorf("%s: %d matches, Brier %v [%v, %v]", f.Forecaster, f.SettledMatches, f.Brier, f.Low, f.High)
		}
		if (f.Forecaster == "eo_model") != (f.Diff == nil) {
			t.Errorf("%s: model_brier_diff %v", f.Forecaster, f.Diff)
		}
		if f.Diff != nil && math.Abs(*f.Diff-(c.Forecasters[0].Brier-f.Brier)) > 2e-6 {
			t.Errorf("%s: model_brier_diff %v, Brier eo_model %v − %v", f.Forecaster, *f.Diff, c.Forecasters[0].Brier, f.Brier)
		}
	}
	if strings.Join(names, ",") != "eo_model,eo_market,elo" {
		t.Errorf("forecasters %v", names)
	}
	count := map[string]int{}
	for _, b := range c.Reliability {
		count[b.Forecaster] += b.Forecasts
		if !(b.Low <= b.Observed && b.Observed <= b.High) {
			t.Errorf("%s bin: observed %v outside [%v, %v]", b.Forecaster, b.Observed, b.Low, b.High)
		}
	}
	months := map[string]int{}
	for _, mb := range c.Monthly {
		months[mb.Forecaster] += mb.SettledMatches
	}
	for _, n := range names {
		if count[n] != c.SettledMatches || months[n] != c.SettledMatches {
			t.Errorf("%s: reliability counts %d, months %d, want %d", n, count[n], months[n], c.SettledMatches)
		}
	}
}

package view

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A metrics row gets the review rows of its own market, in file order; a
// market without them (nothing compared, or a snapshot from before the
// review) renders "comparison": null.
func TestAttachComparisons(t *testing.T) {
	from := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	diff := 0.02
	metrics := []ModelMetricsRow{{Market: "match_winner"}, {Market: "map_winner"}}
	cmp := []ModelComparisonRow{
		{Market: "match_winner", Forecaster: "eo_model", SettledMatches: 7, EvaluatedFrom: from},
		{Market: "match_winner", Forecaster: "eo_market", SettledMatches: 7, EvaluatedFrom: from, ModelDiff: &diff},
		{Market: "other", Forecaster: "elo", SettledMatches: 3},
	}
	rel := []ModelReliabilityRow{{Market: "match_winner", Forecaster: "eo_model", Bin: 5, Forecasts: 7}, {Market: "other", Bin: 1}}
	mon := []ModelMonthlyRow{{Market: "match_winner", Forecaster: "eo_model", Month: from, SettledMatches: 7}}
	attachComparisons(metrics, cmp, rel, mon)

	c := metrics[0].Comparison
	if c == nil || c.SettledMatches != 7 || !c.EvaluatedFrom.Equal(from) || len(c.Forecasters) != 2 ||
		c.Forecasters[1].Forecaster != "eo_market" || len(c.Reliability) != 1 || len(c.Monthly) != 1 {
		t.Fatalf("match_winner comparison: %+v", c)
	}
	if metrics[1].Comparison != nil {
		t.Errorf("map_winner has no review rows, got %+v", metrics[1].Comparison)
	}
	b, err := json.Marshal(&metrics[1])
	if err != nil || !strings.Contains(string(b), `"comparison":null`) {
		t.Errorf("map_winner renders %s (%v)", b, err)
	}
	b, _ = json.Marshal(&metrics[0])
	for _, want := range []string{`"evaluated_from":"2024-06-01T00:00:00Z"`, `"model_brier_diff":0.02`, `"model_brier_diff":null`, `"bin":5`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("match_winner renders %s, without %s", b, want)
		}
	}
	if cb, _ := json.Marshal(c); strings.Contains(string(cb), `"market"`) || strings.Contains(string(cb), `"evaluated_at"`) {
		t.Errorf("the review's rows render fields the contract does not have: %s", cb)
	}

	if got := reportHTML([]modelReportRow{{Market: "other", HTML: "x"}, {Market: "match_winner", HTML: "<html>"}}); string(got) != "<html>" {
		t.Errorf("reportHTML = %q", got)
	}
	if got := reportHTML(nil); got != nil {
		t.Errorf("no report row: %q", got)
	}
}

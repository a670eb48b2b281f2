package view

import "time"

// The model review (MODEL.md, "Model review"): eo_model against the closing
// eo_market line and a tuned Elo on the same settled matches, read from the
// model_comparison, model_reliability and model_monthly tables and served
// as the comparison of each /model/metrics row; and the review report
// (model_report), served as HTML.

// ModelComparisonRow is a row of model_comparison.parquet: one forecaster's
// figures on the compared matches (the comparison's forecasters).
type ModelComparisonRow struct {
	Market         string    `col:"market" json:"-"`
	Forecaster     string    `col:"forecaster" json:"forecaster"`
	SettledMatches int       `col:"settled_matches" json:"settled_matches"`
	Brier          float64   `col:"brier" json:"brier"`
	BrierCILow     float64   `col:"brier_ci_low" json:"brier_ci_low"`
	BrierCIHigh    float64   `col:"brier_ci_high" json:"brier_ci_high"`
	LogLoss        float64   `col:"log_loss" json:"log_loss"`
	Accuracy       float64   `col:"accuracy" json:"accuracy"`
	ModelDiff      *float64  `col:"model_brier_diff" json:"model_brier_diff"`
	ModelDiffLow   *float64  `col:"model_brier_diff_ci_low" json:"model_brier_diff_ci_low"`
	ModelDiffHigh  *float64  `col:"model_brier_diff_ci_high" json:"model_brier_diff_ci_high"`
	Params         string    `col:"params" json:"params"`
	EvaluatedFrom  time.Time `col:"evaluated_from" json:"-"`
	EvaluatedAt    time.Time `col:"evaluated_at" json:"-"`
	ModelVersion   string    `col:"model_version" json:"-"`
}

// ModelReliabilityRow is a row of model_reliability.parquet: one bin of a
// forecaster's reliability on the compared matches.
type ModelReliabilityRow struct {
	Market         string  `col:"market" json:"-"`
	Forecaster     string  `col:"forecaster" json:"forecaster"`
	Bin            int     `col:"bin" json:"bin"`
	BinLow         float64 `col:"bin_low" json:"bin_low"`
	BinHigh        float64 `col:"bin_high" json:"bin_high"`
	Forecasts      int     `col:"forecasts" json:"forecasts"`
	MeanForecast   float64 `col:"mean_forecast" json:"mean_forecast"`
	Observed       float64 `col:"observed" json:"observed"`
	ObservedCILow  float64 `col:"observed_ci_low" json:"observed_ci_low"`
	ObservedCIHigh float64 `col:"observed_ci_high" json:"observed_ci_high"`
}

// ModelMonthlyRow is a row of model_monthly.parquet: a forecaster's Brier
// score over one calendar month of the compared matches.
type ModelMonthlyRow struct {
	Market         string    `col:"market" json:"-"`
	Forecaster     string    `col:"forecaster" json:"forecaster"`
	Month          time.Time `col:"month" json:"month"`
	SettledMatches int       `col:"settled_matches" json:"settled_matches"`
	Brier          float64   `col:"brier" json:"brier"`
	BrierCILow     float64   `col:"brier_ci_low" json:"brier_ci_low"`
	BrierCIHigh    float64   `col:"brier_ci_high" json:"brier_ci_high"`
}

// ModelComparison is the comparison of a /model/metrics row: every
// forecaster scored on the same settled_matches, scheduled from
// evaluated_from on.
type ModelComparison struct {
	EvaluatedFrom  time.Time             `json:"evaluated_from"`
	SettledMatches int                   `json:"settled_matches"`
	Forecasters    []ModelComparisonRow  `json:"forecasters"`
	Reliability    []ModelReliabilityRow `json:"reliability"`
	Monthly        []ModelMonthlyRow     `json:"monthly"`
}

// modelReportRow is the row of model_report.parquet.
type modelReportRow struct {
	Market string `col:"market"`
	HTML   string `col:"html"`
}

// attachComparisons sets each metrics row's Comparison from the review's
// rows of its market (in file order); a market without comparison rows
// (nothing compared, or a snapshot from before the review) keeps nil,
// served as null.
func attachComparisons(metrics []ModelMetricsRow, cmp []ModelComparisonRow, rel []ModelReliabilityRow, mon []ModelMonthlyRow) {
	for i := range metrics {
		market := metrics[i].Market
		var c *ModelComparison
		for _, r := range cmp {
			if r.Market != market {
				continue
			}
			if c == nil {
				c = &ModelComparison{EvaluatedFrom: r.EvaluatedFrom, SettledMatches: r.SettledMatches,
					Reliability: []ModelReliabilityRow{}, Monthly: []ModelMonthlyRow{}}
			}
			c.Forecasters = append(c.Forecasters, r)
		}
		if c == nil {
			continue
		}
		for _, r := range rel {
			if r.Market == market {
				c.Reliability = append(c.Reliability, r)
			}
		}
		for _, r := range mon {
			if r.Market == market {
				c.Monthly = append(c.Monthly, r)
			}
		}
		metrics[i].Comparison = c
	}
}

// reportHTML is the match-winner review report of a snapshot (nil when it
// has none), copied out of the reader's buffers.
func reportHTML(rows []modelReportRow) []byte {
	for _, r := range rows {
		if r.Market == "match_winner" && r.HTML != "" {
			return []byte(r.HTML)
		}
	}
	return nil
}

// ModelReport is the model review report (HTML) of the snapshot served;
// false when the snapshot has none (one published before the review).
func (v *View) ModelReport() ([]byte, bool) {
	r := v.base.ratings
	if r == nil || r.report == nil {
		return nil, false
	}
	return r.report, true
}

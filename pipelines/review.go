package pipelines

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/eodata/eo/model"
	"github.com/eodata/eo/store"
)

// modelRun is what the ratings and model step computed, kept for the model
// review: the matches the model saw, its forecasts (in the matches' order)
// and the gate's metrics.
type modelRun struct {
	matches   []model.Match
	forecasts []model.Forecast
	metrics   model.Metrics
}

// forecasterOrder orders the review's rows as model.Forecasters does.
const forecasterOrder = "CASE forecaster WHEN 'eo_model' THEN 0 WHEN 'eo_market' THEN 1 ELSE 2 END"

// reviewModel compares eo_model with the closing eo_market line and a tuned
// Elo on the same settled matches (model.Review). It runs after the assemble
// step, which marks the closing lines, and writes out_model_comparison,
// out_model_reliability and out_model_monthly (no rows when no settled match
// has both a forecast and a closing line), out_model_report (the review's
// HTML, one row, which the edge serves) and the same report to the store
// (ModelReportKey, ModelReportLatestKey). It returns the compared matches.
func (r *run) reviewModel(ctx context.Context) (int64, error) {
	mr := r.modelRun
	if mr == nil {
		return 0, fmt.Errorf("model review: the ratings and model step has not run")
	}
	type closingRow struct {
		matchID string
		p       float64
	}
	rows, err := query(ctx, r, "model/review_closing.sql", nil, nil, func(x *closingRow) []any { return []any{&x.matchID, &x.p} })
	if err != nil {
		return 0, fmt.Errorf("model review: read closing lines: %w", err)
	}
	closing := make(map[string]float64, len(rows))
	for _, x := range rows {
		closing[x.matchID] = x.p
	}
	m := mr.metrics
	c := model.Review(mr.matches, mr.forecasts, closing, m.EvaluatedAt)
	var buf bytes.Buffer
	if err := model.Report(&buf, m, mr.forecasts, &c); err != nil {
		return 0, err
	}
	if err := r.writeReview(ctx, c, buf.String()); err != nil {
		return 0, err
	}
	if r.o.Store != nil {
		for _, key := range []string{ModelReportKey(r.rep.RunID), ModelReportLatestKey} {
			if err := store.PutBytes(ctx, r.o.Store, key, buf.Bytes()); err != nil {
				return 0, fmt.Errorf("model review: put report: %w", err)
			}
		}
	}
	args := []any{"run", r.rep.RunID, "compared", c.Matches, "from", c.From.Format(time.DateOnly)}
	for _, s := range c.Scores {
		if c.Matches > 0 {
			args = append(args, s.Forecaster+"_brier", round(s.Metrics.Brier, 4))
		}
	}
	r.o.Logger.Info("model reviewed", args...)
	return int64(c.Matches), nil
}

// writeReview creates the review's tables (sql/model/review_tables.sql) and
// fills them from c and the report's HTML.
func (r *run) writeReview(ctx context.Context, c model.Comparison, report string) error {
	db := r.db
	if err := r.do(ctx, "model/review_tables.sql", nil); err != nil {
		return fmt.Errorf("model review: create tables: %w", err)
	}
	m := r.modelRun.metrics
	if err := appendRows(ctx, db, "out_model_report", 1, func(int) []any {
		return []any{m.Market, m.ModelVersion, m.EvaluatedAt, report}
	}); err != nil {
		return fmt.Errorf("model review: append report: %w", err)
	}
	if c.Matches == 0 {
		return nil
	}
	nullable := func(ok bool, v float64) any {
		if !ok {
			return nil
		}
		return round(v, 6)
	}
	if err := appendRows(ctx, db, "out_model_comparison", len(c.Scores), func(i int) []any {
		s := c.Scores[i]
		e := s.Metrics
		return []any{c.Market, s.Forecaster, int32(e.SettledMatches), round(e.Brier, 6), round(e.BrierCILow, 6),
			round(e.BrierCIHigh, 6), round(e.LogLoss, 6), round(e.Accuracy, 6), nullable(s.HasDiff, s.ModelDiff),
			nullable(s.HasDiff, s.ModelDiffLow), nullable(s.HasDiff, s.ModelDiffHigh), s.Params, c.From, c.EvaluatedAt,
			model.Version}
	}); err != nil {
		return fmt.Errorf("model review: append comparison: %w", err)
	}
	if err := appendRows(ctx, db, "out_model_reliability", len(c.Reliability), func(i int) []any {
		b := c.Reliability[i]
		return []any{c.Market, b.Forecaster, int32(b.Bin), b.Low, b.High, int32(b.N), round(b.MeanP, 6),
			round(b.Observed, 6), round(b.ObservedLow, 6), round(b.ObservedHigh, 6)}
	}); err != nil {
		return fmt.Errorf("model review: append reliability: %w", err)
	}
	if err := appendRows(ctx, db, "out_model_monthly", len(c.Monthly), func(i int) []any {
		mb := c.Monthly[i]
		return []any{c.Market, mb.Forecaster, mb.Month, int32(mb.N), round(mb.Brier, 6), round(mb.Low, 6), round(mb.High, 6)}
	}); err != nil {
		return fmt.Errorf("model review: append monthly: %w", err)
	}
	return nil
}

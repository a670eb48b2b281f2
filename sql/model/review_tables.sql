-- The model review's tables (model.Review), filled from Go: eo_model against
-- the closing eo_market line and the tuned Elo on the same settled matches,
-- and the review report's HTML.
CREATE OR REPLACE TABLE out_model_comparison (
  market VARCHAR, forecaster VARCHAR, settled_matches INTEGER,
  brier DOUBLE, brier_ci_low DOUBLE, brier_ci_high DOUBLE, log_loss DOUBLE, accuracy DOUBLE,
  model_brier_diff DOUBLE, model_brier_diff_ci_low DOUBLE, model_brier_diff_ci_high DOUBLE,
  params VARCHAR, evaluated_from TIMESTAMPTZ, evaluated_at TIMESTAMPTZ, model_version VARCHAR);
CREATE OR REPLACE TABLE out_model_reliability (
  market VARCHAR, forecaster VARCHAR, bin INTEGER, bin_low DOUBLE, bin_high DOUBLE, forecasts INTEGER,
  mean_forecast DOUBLE, observed DOUBLE, observed_ci_low DOUBLE, observed_ci_high DOUBLE);
CREATE OR REPLACE TABLE out_model_monthly (
  market VARCHAR, forecaster VARCHAR, month TIMESTAMPTZ, settled_matches INTEGER,
  brier DOUBLE, brier_ci_low DOUBLE, brier_ci_high DOUBLE);
CREATE OR REPLACE TABLE out_model_report (
  market VARCHAR, model_version VARCHAR, evaluated_at TIMESTAMPTZ, html VARCHAR);

-- Rows of the settled walk-forward forecasts, appended from Go.
CREATE OR REPLACE TEMP TABLE model_fc_rows (
  match_id VARCHAR, scheduled_at TIMESTAMPTZ, p_home DOUBLE, outcome INTEGER, brier DOUBLE)

-- Rows of the team rating history, appended from Go (model.RunResult.History).
CREATE OR REPLACE TEMP TABLE model_rating_rows (
  team_id VARCHAR, period_start TIMESTAMPTZ, as_of TIMESTAMPTZ, rating DOUBLE, rd DOUBLE, volatility DOUBLE,
  value DOUBLE, rank INTEGER)

-- out_model_forecasts from its rows; the parameter is model.Version.
CREATE OR REPLACE TABLE out_model_forecasts AS
SELECT CAST(match_id AS UUID) AS match_id, scheduled_at, p_home, outcome, brier, ?::VARCHAR AS model_version
FROM model_fc_rows

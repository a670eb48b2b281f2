-- out_model_metrics: one row, the gate's figures (parameters from model.Evaluate).
CREATE OR REPLACE TABLE out_model_metrics AS
SELECT ?::VARCHAR AS market, ?::DOUBLE AS brier, ?::DOUBLE AS brier_ci_low, ?::DOUBLE AS brier_ci_high,
       ?::DOUBLE AS log_loss, ?::DOUBLE AS accuracy, ?::DOUBLE AS brier_skill_score,
       ?::INTEGER AS settled_matches, ?::VARCHAR AS model_version, ?::BOOLEAN AS gate_passed,
       ?::INTEGER AS min_settled_matches, ?::TIMESTAMPTZ AS evaluated_at

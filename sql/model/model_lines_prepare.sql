-- out_model_lines (the odds_lines columns) without eo_model rows, and the
-- table the model's lines are appended to.
CREATE TABLE IF NOT EXISTS out_model_lines (
  id UUID, match_id UUID, tournament_id UUID, market_id UUID, market VARCHAR, map_number INTEGER,
  source VARCHAR, model_version VARCHAR, book_count INTEGER, outcome_key VARCHAR, label VARCHAR,
  participant_type VARCHAR, participant_id UUID, line DOUBLE, price DOUBLE, is_winner BOOLEAN,
  is_closing BOOLEAN, captured_at TIMESTAMPTZ);
DELETE FROM out_model_lines WHERE source = 'eo_model';
CREATE OR REPLACE TEMP TABLE model_line_rows (
  id UUID, market_id UUID,
  match_id VARCHAR, outcome_key VARCHAR, team_id VARCHAR, price DOUBLE, is_winner BOOLEAN,
  is_closing BOOLEAN, captured_at TIMESTAMPTZ, model_version VARCHAR)

-- Rows of the roster history, appended from Go (model.RosterHistory).
CREATE OR REPLACE TEMP TABLE model_roster_rows (
  team_id VARCHAR, match_id VARCHAR, played_at TIMESTAMPTZ, player_ids VARCHAR, players_in VARCHAR,
  players_out VARCHAR, has_debutant BOOLEAN, days_since_prev INTEGER, changed_count INTEGER, continuity VARCHAR)

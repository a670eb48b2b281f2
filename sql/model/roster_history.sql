-- out_roster_history from its rows (id lists as UUID arrays).
CREATE OR REPLACE MACRO model_uuid_list(s) AS
  CASE WHEN s = '' THEN CAST([] AS UUID[]) ELSE CAST(string_split(s, ',') AS UUID[]) END;
CREATE OR REPLACE TABLE out_roster_history AS
SELECT CAST(team_id AS UUID) AS team_id, CAST(match_id AS UUID) AS match_id, played_at,
       model_uuid_list(player_ids) AS player_ids, model_uuid_list(players_in) AS players_in,
       model_uuid_list(players_out) AS players_out, has_debutant, days_since_prev, changed_count, continuity
FROM model_roster_rows;
DROP TABLE model_roster_rows;

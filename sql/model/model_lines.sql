-- The eo_model match-winner lines, with the ids and market ids of the
-- eo_market lines (eo_uuid, eo_market_key of sql/derive/00_odds.sql).
INSERT INTO out_model_lines
SELECT eo_uuid('odds_line' || chr(0) || CAST(k.market_id AS VARCHAR) || chr(0) || k.outcome_key || chr(0) ||
               'eo_model' || chr(0) || CAST(epoch_us(k.captured_at) AS VARCHAR)) AS id,
       k.match_id, CAST(NULL AS UUID) AS tournament_id, k.market_id, 'match_winner' AS market,
       CAST(NULL AS INTEGER) AS map_number, 'eo_model' AS source, k.model_version, CAST(NULL AS INTEGER) AS book_count,
       k.outcome_key, t.name AS label, 'team' AS participant_type, t.id AS participant_id,
       CAST(NULL AS DOUBLE) AS line, k.price, k.is_winner, k.is_closing, k.captured_at
FROM (SELECT l.* REPLACE (CAST(l.match_id AS UUID) AS match_id),
             eo_uuid(eo_market_key('match_winner', CAST(l.match_id AS UUID), NULL, NULL, NULL)) AS market_id
      FROM model_line_rows l) k
JOIN out_teams t ON t.id = CAST(k.team_id AS UUID);
DROP TABLE model_line_rows;

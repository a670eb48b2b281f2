-- The eo_model match-winner lines, with the ids package market minted (the
-- eo_market line's market_id for the same match).
INSERT INTO out_model_lines
SELECT k.id, CAST(k.match_id AS UUID) AS match_id, CAST(NULL AS UUID) AS tournament_id, k.market_id,
       'match_winner' AS market, CAST(NULL AS INTEGER) AS map_number, 'eo_model' AS source, k.model_version,
       CAST(NULL AS INTEGER) AS book_count, k.outcome_key, t.name AS label, 'team' AS participant_type,
       t.id AS participant_id, CAST(NULL AS DOUBLE) AS line, k.price, k.is_winner, k.is_closing, k.captured_at
FROM model_line_rows k
JOIN out_teams t ON t.id = CAST(k.team_id AS UUID);
DROP TABLE model_line_rows;

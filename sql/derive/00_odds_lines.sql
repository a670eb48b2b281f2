-- eo_market, third part: the series the Go step (pipelines/odds.go) wrote
-- into odds_series, keyed again (market ids, outcome keys) and labelled as
-- out_market_lines; then odds_matches for data_available.odds. See
-- 00_odds.sql for the rule. Nothing here names a book.

CREATE OR REPLACE TEMP TABLE odds_market_series AS
SELECT k.market_id, s.t, o.outcome, s.book_count, s.price
FROM odds_series s
JOIN odds_markets k USING (mi)
JOIN odds_outcome_keys o USING (oi);

CREATE OR REPLACE TABLE out_market_lines AS
SELECT eo_uuid('odds_line' || chr(0) || CAST(s.market_id AS VARCHAR) || chr(0) || s.outcome || chr(0) ||
               'eo_market' || chr(0) || CAST(epoch_us(s.t) AS VARCHAR)) AS id,
       k.match_id, k.tournament_id, s.market_id, k.market, k.map_number,
       'eo_market' AS source, CAST(NULL AS VARCHAR) AS model_version, s.book_count,
       s.outcome AS outcome_key,
       CASE
         WHEN k.market = 'total_maps' THEN (CASE s.outcome WHEN 'over' THEN 'Over ' ELSE 'Under ' END) || CAST(k.line AS VARCHAR)
         WHEN k.market = 'outright' THEN coalesce(tt.name, '')
         WHEN k.market = 'map_handicap' THEN
           (CASE s.outcome WHEN 'home' THEN ta.name ELSE tb.name END) || ' ' ||
           printf('%+g', CASE s.outcome WHEN 'home' THEN k.line ELSE -k.line END)
         WHEN k.market = 'map_winner' THEN (CASE s.outcome WHEN 'home' THEN ta.name ELSE tb.name END) || ' (map ' || k.map_number || ')'
         ELSE CASE s.outcome WHEN 'home' THEN ta.name ELSE tb.name END
       END AS label,
       CASE WHEN k.market = 'total_maps' THEN NULL ELSE 'team' END AS participant_type,
       CASE WHEN k.market = 'outright' THEN CAST(s.outcome AS UUID)
            WHEN k.market = 'total_maps' THEN NULL
            WHEN s.outcome = 'home' THEN m.team_a_id ELSE m.team_b_id END AS participant_id,
       k.line, s.price, CAST(NULL AS BOOLEAN) AS is_winner, false AS is_closing, s.t AS captured_at
FROM odds_market_series s
JOIN odds_markets k ON k.market_id = s.market_id
LEFT JOIN n_matches m ON m.id = k.match_id
LEFT JOIN out_teams ta ON ta.id = m.team_a_id
LEFT JOIN out_teams tb ON tb.id = m.team_b_id
LEFT JOIN out_teams tt ON k.market = 'outright' AND CAST(tt.id AS VARCHAR) = s.outcome;

-- matches with at least one published line, for data_available.odds
CREATE OR REPLACE TABLE odds_matches AS
SELECT DISTINCT match_id FROM (
  SELECT match_id FROM out_market_lines UNION ALL SELECT match_id FROM out_model_lines)
WHERE match_id IS NOT NULL;

DROP TABLE odds_series;
DROP TABLE odds_caps;
DROP TABLE odds_market_series;
DROP TABLE odds_markets;
DROP TABLE odds_outcome_keys;
DROP TABLE odds_contributor_keys;

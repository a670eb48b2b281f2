-- eo_market, third part: the lines the Go walk (pipelines/odds.go) wrote
-- into odds_series, as out_market_lines; then odds_matches for
-- data_available.odds. See 00_odds.sql. Nothing here names a book.
CREATE OR REPLACE TABLE out_market_lines AS
SELECT s.id, k.match_id, k.tournament_id, s.market_id, k.market,
       k.map_number, 'eo_market' AS source, CAST(NULL AS VARCHAR) AS model_version, s.book_count,
       s.outcome AS outcome_key, s.label, s.participant_type, s.participant_id,
       k.line, s.price, CAST(NULL AS BOOLEAN) AS is_winner, false AS is_closing, s.captured_at
FROM odds_series s JOIN odds_markets k USING (mi);

-- matches with at least one published line, for data_available.odds
CREATE OR REPLACE TABLE odds_matches AS
SELECT DISTINCT match_id FROM (
  SELECT match_id FROM out_market_lines UNION ALL SELECT match_id FROM out_model_lines)
WHERE match_id IS NOT NULL;

DROP TABLE odds_series;
DROP TABLE odds_caps;
DROP TABLE odds_markets;
DROP TABLE odds_book_root;
DROP TABLE odds_names;

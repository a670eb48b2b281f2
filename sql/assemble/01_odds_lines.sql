-- The published odds_lines: eo_market lines (00_odds.sql) and any eo_model
-- lines a model step appended to out_model_lines, with settlement and the
-- closing flag applied uniformly to both sources. An assemble step: it runs
-- after the derive steps (out_matches, derive/01_matches.sql) and the ratings
-- and model step (out_model_lines).
--
-- is_winner (null until the market settles; a void market stays null):
--  * match markets settle when the match is completed: match_winner home =
--    team A won the series; total_maps over = maps played (score_a + score_b)
--    above the line, under = below; map_handicap home = score_a + line >
--    score_b, away = score_a + line < score_b; map_winner = the map's result
--    (map_results). A push (maps equal to the line) and a map that was not
--    played are void: is_winner stays null. A cancelled match never settles.
--  * an outright settles when every match of its tournament is completed or
--    cancelled and the latest-scheduled one (the final) is completed with a
--    winner: that team's line wins, every other loses.
-- is_closing: once the market settles (or its match is cancelled), exactly
-- one row per (market, outcome, source) series: the last captured strictly
-- before the match's scheduled_at (outright: the tournament's starts_at, or
-- the series' last row when starts_at is unknown). false everywhere else.
CREATE TABLE IF NOT EXISTS out_model_lines AS SELECT * FROM out_market_lines WHERE false;

CREATE OR REPLACE TEMP TABLE odds_all AS
SELECT id, match_id, tournament_id, market_id, market, map_number, source, model_version, book_count,
       outcome_key, label, participant_type, participant_id, line, price, captured_at
FROM out_market_lines
UNION ALL
SELECT id, match_id, tournament_id, market_id, market, map_number, source, model_version, book_count,
       outcome_key, label, participant_type, participant_id, line, price, captured_at
FROM out_model_lines;

-- tournaments whose outright is settled, and the winner
CREATE OR REPLACE TEMP TABLE odds_tour_winner AS
SELECT tournament_id, arg_max(winner_team_id, scheduled_at) AS winner,
       bool_and(status IN ('completed', 'cancelled')) AS all_done,
       arg_max(status, scheduled_at) AS last_status
FROM out_matches GROUP BY tournament_id;

CREATE OR REPLACE TEMP TABLE odds_settle AS
SELECT a.id,
  CASE
    WHEN a.match_id IS NOT NULL THEN
      CASE WHEN m.status <> 'completed' THEN NULL
           WHEN a.market = 'match_winner' THEN
             CASE WHEN m.score_a = m.score_b THEN NULL ELSE (a.outcome_key = 'home') = (m.score_a > m.score_b) END
           WHEN a.market = 'total_maps' THEN
             CASE WHEN a.line IS NULL OR m.score_a + m.score_b = a.line THEN NULL
                  ELSE (a.outcome_key = 'over') = (m.score_a + m.score_b > a.line) END
           WHEN a.market = 'map_handicap' THEN
             CASE WHEN a.line IS NULL OR m.score_a + a.line = m.score_b THEN NULL
                  ELSE (a.outcome_key = 'home') = (m.score_a + a.line > m.score_b) END
           WHEN a.market = 'map_winner' THEN
             CASE WHEN r.score_a IS NULL OR r.score_a = r.score_b THEN NULL
                  ELSE (a.outcome_key = 'home') = (r.score_a > r.score_b) END
      END
    WHEN w.all_done AND w.last_status = 'completed' AND w.winner IS NOT NULL THEN a.participant_id = w.winner
  END AS is_winner,
  CASE WHEN a.match_id IS NOT NULL THEN m.status IN ('completed', 'cancelled')
       ELSE coalesce(w.all_done AND w.last_status = 'completed' AND w.winner IS NOT NULL, false) END AS closes,
  CASE WHEN a.match_id IS NOT NULL THEN m.scheduled_at ELSE t.starts_at END AS cutoff
-- Every join is on keys alone (each matches at most one row): the CASEs above
-- choose which joined row applies. A condition on the outer side only (such
-- as a.market = 'map_winner' or a.match_id IS NULL) inside a LEFT JOIN's ON
-- made DuckDB fall back from a hash join: 3 s at 5k matches, over 9 minutes
-- at 100k.
FROM odds_all a
LEFT JOIN out_matches m ON m.id = a.match_id
LEFT JOIN out_map_results r ON r.match_id = a.match_id AND r.map_number = a.map_number
LEFT JOIN odds_tour_winner w ON w.tournament_id = a.tournament_id
LEFT JOIN out_tournaments t ON t.id = a.tournament_id;

CREATE OR REPLACE TABLE out_odds_lines AS
WITH j AS (
  SELECT a.*, s.is_winner, s.closes, s.cutoff FROM odds_all a JOIN odds_settle s ON s.id = a.id),
c AS (
  SELECT id, row_number() OVER (PARTITION BY market_id, outcome_key, source ORDER BY captured_at DESC, id DESC) AS rn
  FROM j WHERE closes AND (cutoff IS NULL OR captured_at < cutoff))
SELECT j.id, j.match_id, j.tournament_id, j.market_id, j.market, j.map_number, j.source, j.model_version,
       j.book_count, j.outcome_key, j.label, j.participant_type, j.participant_id, j.line, j.price,
       j.is_winner, coalesce(c.rn = 1, false) AS is_closing, j.captured_at
FROM j LEFT JOIN c ON c.id = j.id;

-- data_available.odds: 00_odds.sql filled odds_matches from the market
-- lines before out_matches was built; model lines (appended later) count too.
UPDATE out_matches SET has_odds = true
WHERE NOT has_odds AND id IN (SELECT match_id FROM out_odds_lines WHERE match_id IS NOT NULL);

DROP TABLE odds_all;
DROP TABLE odds_settle;

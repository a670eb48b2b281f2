-- out_rating_history from its rows: each team's Glicko-2 rating per rating
-- period in which it played (rewritten whole on every model run).
CREATE OR REPLACE TABLE out_rating_history AS
SELECT CAST(team_id AS UUID) AS team_id, period_start, as_of, rating, rd, volatility, value, rank
FROM model_rating_rows;
DROP TABLE model_rating_rows;

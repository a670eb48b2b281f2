-- The markets of the eo_market walk (pipelines/odds.go), ids as text.
SELECT mi, market, coalesce(CAST(match_id AS VARCHAR), ''), coalesce(CAST(tournament_id AS VARCHAR), ''),
       coalesce(map_number, 0), line, coalesce(CAST(team_a_id AS VARCHAR), ''), coalesce(CAST(team_b_id AS VARCHAR), ''),
       coalesce(team_a_name, ''), coalesce(team_b_name, '')
FROM odds_markets ORDER BY mi;

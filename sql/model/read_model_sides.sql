-- Each side of a completed match from its map-level stat lines: the kills
-- summed over the maps (eo_model 2.0's kill-share rating) and the players
-- fielded (its roster-change handling).
SELECT CAST(s.match_id AS VARCHAR), CAST(s.team_id AS VARCHAR), CAST(sum(s.kills) AS DOUBLE),
       string_agg(DISTINCT CAST(s.player_id AS VARCHAR), ',' ORDER BY CAST(s.player_id AS VARCHAR))
FROM out_player_stats s JOIN out_matches m ON m.id = s.match_id
WHERE s.map_number IS NOT NULL AND m.status = 'completed' AND s.team_id IN (m.team_a_id, m.team_b_id)
GROUP BY s.match_id, s.team_id
ORDER BY 1, 2

-- Each team's players per completed match, from the map-level stat lines.
SELECT CAST(s.team_id AS VARCHAR), CAST(s.match_id AS VARCHAR), m.scheduled_at,
       string_agg(DISTINCT CAST(s.player_id AS VARCHAR), ',' ORDER BY CAST(s.player_id AS VARCHAR))
FROM out_player_stats s JOIN out_matches m ON m.id = s.match_id
WHERE s.map_number IS NOT NULL AND m.status = 'completed' AND s.team_id IN (m.team_a_id, m.team_b_id)
GROUP BY s.team_id, s.match_id, m.scheduled_at
ORDER BY 1, 3, 2

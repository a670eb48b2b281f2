-- Map-level rating lines of completed matches in (?, ?]: the player board's window.
SELECT CAST(s.player_id AS VARCHAR), CAST(s.match_id AS VARCHAR), m.scheduled_at, s.rating
FROM out_player_stats s JOIN out_matches m ON m.id = s.match_id
WHERE s.map_number IS NOT NULL AND m.status = 'completed' AND s.rating IS NOT NULL
  AND m.scheduled_at > ? AND m.scheduled_at <= ?
ORDER BY m.scheduled_at, s.match_id, s.map_number, s.player_id

-- The map results of completed matches (eo_model 2.0's map-level rating:
-- rounds won by each team), in map order.
SELECT CAST(r.match_id AS VARCHAR), coalesce(r.map_name, ''), r.score_a, r.score_b
FROM out_map_results r JOIN out_matches m ON m.id = r.match_id
WHERE m.status = 'completed'
ORDER BY r.match_id, r.map_number

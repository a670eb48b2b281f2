-- Every named key with its current name and its registered name and slug.
WITH cur AS (
  SELECT 'tournament' AS kind, t.id AS ukey, t.name FROM v_tournaments t
  UNION ALL SELECT 'team', id, name FROM v_teams
  UNION ALL SELECT 'player', id, nickname FROM v_players)
SELECT c.kind, c.ukey, c.name, s.name, s.slug, i.first_seen
FROM cur c
JOIN id_map i ON i.kind = c.kind AND i.ukey = c.ukey
LEFT JOIN slug_map s ON s.kind = c.kind AND s.ukey = c.ukey
ORDER BY c.kind, i.first_seen, c.ukey

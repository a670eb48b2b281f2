-- Keys seen for the first time (no id yet), with the first batch that holds them.
SELECT kind, ukey, min(batch_seq) FROM (
  SELECT 'game' AS kind, 'cs2' AS ukey, 0 AS batch_seq
  UNION ALL SELECT 'tournament', id, batch_seq FROM c_tournaments WHERE id IN (SELECT id FROM v_tournaments)
  UNION ALL SELECT 'team', id, batch_seq FROM c_teams WHERE id IN (SELECT id FROM v_teams)
  UNION ALL SELECT 'player', id, batch_seq FROM c_players WHERE id IN (SELECT id FROM v_players)
  UNION ALL SELECT 'match', id, batch_seq FROM c_matches WHERE id IN (SELECT id FROM v_matches)
) k
WHERE NOT EXISTS (SELECT 1 FROM id_map i WHERE i.kind = k.kind AND i.ukey = k.ukey)
GROUP BY kind, ukey ORDER BY kind, ukey

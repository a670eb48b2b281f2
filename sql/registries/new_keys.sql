-- Keys seen for the first time (no id yet), with the first batch that holds
-- a version of them the checks kept (a quarantined one is not counted).
SELECT kind, ukey, min(batch_seq) FROM (
  SELECT 'game' AS kind, 'cs2' AS ukey, 0 AS batch_seq
  UNION ALL SELECT 'tournament', id, batch_seq FROM c_tournaments c WHERE id IN (SELECT id FROM v_tournaments)
    AND NOT EXISTS (SELECT 1 FROM bad b WHERE b.entity = 'tournaments' AND b.batch_seq = c.batch_seq AND b.line_no = c.line_no)
  UNION ALL SELECT 'team', id, batch_seq FROM c_teams c WHERE id IN (SELECT id FROM v_teams)
    AND NOT EXISTS (SELECT 1 FROM bad b WHERE b.entity = 'teams' AND b.batch_seq = c.batch_seq AND b.line_no = c.line_no)
  UNION ALL SELECT 'player', id, batch_seq FROM c_players c WHERE id IN (SELECT id FROM v_players)
    AND NOT EXISTS (SELECT 1 FROM bad b WHERE b.entity = 'players' AND b.batch_seq = c.batch_seq AND b.line_no = c.line_no)
  UNION ALL SELECT 'match', id, batch_seq FROM c_matches c WHERE id IN (SELECT id FROM v_matches)
    AND NOT EXISTS (SELECT 1 FROM bad b WHERE b.entity = 'matches' AND b.batch_seq = c.batch_seq AND b.line_no = c.line_no)
) k
WHERE NOT EXISTS (SELECT 1 FROM id_map i WHERE i.kind = k.kind AND i.ukey = k.ukey)
GROUP BY kind, ukey ORDER BY kind, ukey;

-- The upstream's published team ranks over time: every landed team record
-- that carries an external_rank, known from its changed_at (an importer
-- lands one record per rank change; the served external_rank is the latest).
SELECT CAST(i.id AS VARCHAR), c.external_rank, c.changed_at
FROM c_teams c JOIN id_map i ON i.kind = 'team' AND i.ukey = c.id
WHERE c.external_rank IS NOT NULL AND c.external_rank > 0
ORDER BY 1, 3, 2

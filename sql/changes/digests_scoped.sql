-- The digests of an incremental run that did not run the model again
-- (pipelines/changes.go): only the scope's matches and their odds can have
-- changed (the run replaced their rows and no other), so theirs are made
-- again, as digests.sql makes them, and every other digest is the previous
-- run's. TestIncrementalEqualsFull holds them equal to a full run's (a full
-- run after it finds nothing changed).
CREATE OR REPLACE TEMP TABLE entity_digests AS
SELECT entity_type, entity_id, digest FROM prev_digests
WHERE entity_type NOT IN ('match', 'odds') OR entity_id NOT IN (SELECT CAST(id AS VARCHAR) FROM memory.scope_ids)
UNION ALL
SELECT 'match', CAST(t.id AS VARCHAR), md5(CAST(to_json(t) AS VARCHAR))
FROM out_matches t
WHERE t.id IN (SELECT id FROM memory.scope_ids)
UNION ALL
SELECT 'odds', CAST(o.match_id AS VARCHAR),
    CAST(sum(md5_number_lower(CAST(to_json(o) AS VARCHAR))) AS VARCHAR) || ':' || CAST(count(*) AS VARCHAR)
FROM out_odds_lines o
WHERE o.match_id IN (SELECT id FROM memory.scope_ids)
GROUP BY o.match_id;

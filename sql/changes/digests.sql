-- Every published entity's digest, as the /changes feed announces them
-- (pipelines/changes.go): a tournament, team, player or match is the md5
-- of its row (as JSON, so NULL and 'NULL' differ); a match's odds are its
-- odds_lines rows, digested as an order-free sum of the rows' md5s and
-- their count (a plain aggregate: it spills). A team rename changes the
-- team's row and the rows of its matches (their display names).
--
-- .Scoped: only the scope's matches and their odds can have changed (the
-- run replaced their rows and no other, and the model did not run): theirs
-- are made again and every other digest is the previous run's. .Keep: none
-- of the digested tables changed: the previous run's, as they are.
CREATE OR REPLACE TEMP TABLE entity_digests AS
{{- if .Keep}}
SELECT * FROM prev_digests;
{{- else}}
{{- if .Scoped}}
SELECT entity_type, entity_id, digest FROM prev_digests
WHERE entity_type NOT IN ('match', 'odds') OR entity_id NOT IN (SELECT CAST(id AS VARCHAR) FROM memory.scope_ids)
UNION ALL
{{- else}}
SELECT 'tournament' AS entity_type, CAST(t.id AS VARCHAR) AS entity_id, md5(CAST(to_json(t) AS VARCHAR)) AS digest
FROM out_tournaments t
UNION ALL
SELECT 'team', CAST(t.id AS VARCHAR), md5(CAST(to_json(t) AS VARCHAR)) FROM out_teams t
UNION ALL
SELECT 'player', CAST(t.id AS VARCHAR), md5(CAST(to_json(t) AS VARCHAR)) FROM out_players t
UNION ALL
{{- end}}
SELECT 'match', CAST(t.id AS VARCHAR), md5(CAST(to_json(t) AS VARCHAR)) FROM out_matches t
{{- if .Scoped}} WHERE t.id IN (SELECT id FROM memory.scope_ids){{end}}
UNION ALL
SELECT 'odds', CAST(o.match_id AS VARCHAR),
    CAST(sum(md5_number_lower(CAST(to_json(o) AS VARCHAR))) AS VARCHAR) || ':' || CAST(count(*) AS VARCHAR)
FROM out_odds_lines o
WHERE {{if .Scoped}}o.match_id IN (SELECT id FROM memory.scope_ids){{else}}o.match_id IS NOT NULL{{end}}
GROUP BY o.match_id;
{{- end}}

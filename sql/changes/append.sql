-- The new change log (pipelines/changes.go): the previous one trimmed to
-- the retention window, then one entry per entity whose digest changed
-- since the previous run, numbered on from the previous log's last
-- position. $1 is the run's start (changed_at of the new entries), $2 the
-- retention cutoff, $3 the position a new log starts after (the run's
-- start in microseconds since 1970), $4 whether previous digests exist (a
-- first run records none: nothing can hold a cursor from before it).
--
-- The first row (entity_type '_log', kind 'horizon') is the log's
-- horizon: entries at or before its position were trimmed (or precede the
-- log); a cursor older than it cannot be answered.
CREATE OR REPLACE TABLE out_changes AS
WITH prev AS (
    SELECT * FROM prev_changes WHERE entity_type <> '_log'
), mark AS (
    SELECT max(position) AS horizon, max(changed_at) AS marked_at FROM prev_changes WHERE entity_type = '_log'
), trimmed AS (
    -- entries are trimmed as a prefix: up to the newest one past the window
    SELECT max(position) AS pos FROM prev WHERE changed_at < $2
), horizon AS (
    -- Without previous digests the changes since the log's last entry are
    -- unknown: the log starts again after it (every cursor is older).
    SELECT CASE
            WHEN NOT $4 THEN greatest(coalesce((SELECT max(position) FROM prev_changes) + 1, $3), $3)
            WHEN trimmed.pos > coalesce(mark.horizon, $3) THEN trimmed.pos
            ELSE coalesce(mark.horizon, $3) END AS pos,
        CASE WHEN NOT $4 OR trimmed.pos > coalesce(mark.horizon, $3) OR mark.marked_at IS NULL THEN $1 ELSE mark.marked_at END AS marked_at
    FROM mark, trimmed
), top AS (
    SELECT greatest(coalesce((SELECT max(position) FROM prev_changes), $3), (SELECT pos FROM horizon)) AS pos
), fresh AS (
    SELECT coalesce(c.entity_type, p.entity_type) AS entity_type, coalesce(c.entity_id, p.entity_id) AS entity_id,
        CASE WHEN p.digest IS NULL THEN 'created' WHEN c.digest IS NULL THEN 'deleted' ELSE 'updated' END AS kind
    FROM entity_digests c
    FULL JOIN prev_digests p ON c.entity_type = p.entity_type AND c.entity_id = p.entity_id
    WHERE $4 AND c.digest IS DISTINCT FROM p.digest
)
SELECT pos AS position, '_log' AS entity_type, CAST(NULL AS VARCHAR) AS entity_id, 'horizon' AS kind, marked_at AS changed_at FROM horizon
UNION ALL
SELECT position, entity_type, entity_id, kind, changed_at FROM prev WHERE position > (SELECT pos FROM horizon)
UNION ALL
SELECT (SELECT pos FROM top) + row_number() OVER (
        ORDER BY list_position(['tournament', 'team', 'player', 'match', 'odds'], entity_type), entity_id),
    entity_type, entity_id, kind, $1
FROM fresh;

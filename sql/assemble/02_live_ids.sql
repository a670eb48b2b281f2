-- live_ids: upstream id -> service id of matches, teams and tournaments, for
-- the edge's live path. Live events are upstream-facing (they carry the
-- upstream's ids, like raw records); the edge maps them to service ids with
-- this table. Upstream ids of these kinds are not secret; books are never
-- listed here.
CREATE OR REPLACE TABLE out_live_ids AS
SELECT kind, ukey AS upstream_id, id
FROM id_map
WHERE kind IN ('match', 'team', 'tournament');

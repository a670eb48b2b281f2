-- The scope's matches and tournaments by service id, once the ids are minted.
CREATE OR REPLACE TABLE scope_ids AS
SELECT id FROM id_map WHERE kind = 'match' AND ukey IN (SELECT ukey FROM scope_u);
CREATE OR REPLACE TABLE scope_tours AS
SELECT id FROM id_map WHERE kind = 'tournament' AND ukey IN (SELECT ukey FROM scope_tu);

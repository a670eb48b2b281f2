-- The id registry (one id per kind and upstream key, kept across runs), the
-- slug registry (the slug of each kind and upstream key, and the name it was
-- made from) and the ids minted in Go (MintID) for this run's new keys.
CREATE OR REPLACE TABLE id_map (kind VARCHAR, ukey VARCHAR, id UUID, first_seen TIMESTAMPTZ);
CREATE OR REPLACE TABLE slug_map (kind VARCHAR, ukey VARCHAR, name VARCHAR, slug VARCHAR);
CREATE OR REPLACE TEMP TABLE new_ids (kind VARCHAR, ukey VARCHAR, id VARCHAR, first_seen TIMESTAMPTZ);

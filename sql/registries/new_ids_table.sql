-- Ids minted in Go (MintID) for the new keys.
CREATE OR REPLACE TEMP TABLE new_ids (kind VARCHAR, ukey VARCHAR, id VARCHAR, first_seen TIMESTAMPTZ)

-- The id registry: one id per (kind, upstream key), kept across runs.
CREATE OR REPLACE TABLE id_map (kind VARCHAR, ukey VARCHAR, id UUID, first_seen TIMESTAMPTZ)

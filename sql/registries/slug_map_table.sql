-- The slug registry: the slug of each (kind, upstream key) and the name it was made from.
CREATE OR REPLACE TABLE slug_map (kind VARCHAR, ukey VARCHAR, name VARCHAR, slug VARCHAR);

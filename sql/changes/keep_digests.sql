-- The digests of an incremental run that changed none of the digested
-- tables (pipelines/changes.go): the previous run's, as they are.
CREATE OR REPLACE TEMP TABLE entity_digests AS SELECT * FROM prev_digests;

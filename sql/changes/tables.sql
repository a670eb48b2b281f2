-- The change log's inputs (pipelines/changes.go): the previous run's
-- digests and change log, filled from the store when it holds them.
CREATE OR REPLACE TEMP TABLE prev_digests (entity_type VARCHAR, entity_id VARCHAR, digest VARCHAR);
CREATE OR REPLACE TEMP TABLE prev_changes (position BIGINT, entity_type VARCHAR, entity_id VARCHAR, kind VARCHAR,
    changed_at TIMESTAMPTZ);

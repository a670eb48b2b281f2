-- Quarantined lines read back from their raw files.
CREATE OR REPLACE TEMP TABLE q_bodies (batch_seq INTEGER, entity VARCHAR, line_no INTEGER, body VARCHAR);

-- Quarantined lines whose body is read back from their raw file.
SELECT batch_seq, entity, line_no FROM quarantine WHERE body IS NULL ORDER BY ALL;

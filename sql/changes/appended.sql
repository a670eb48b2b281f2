SELECT count(*) FROM out_changes WHERE entity_type <> '_log' AND changed_at = ?;

SELECT * FROM {{.DB}}.v_match_updates WHERE match_id IN (SELECT ukey FROM memory.scope_completed);

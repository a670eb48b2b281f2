SELECT * FROM {{.DB}}.out_map_results WHERE match_id IN (SELECT id FROM memory.scope_completed);

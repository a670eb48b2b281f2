SELECT match_id, map_number, player_id, team_id, kills, rating FROM {{.DB}}.out_player_stats
WHERE match_id IN (SELECT id FROM memory.scope_completed);

-- What the team profiles read of the scope's matches.
SELECT id, team_a_id, team_b_id, status = 'completed', winner_team_id, scheduled_at
FROM {{.DB}}.out_matches WHERE id IN (SELECT id FROM memory.scope_ids);

-- What the ratings and model step reads of the scope's matches (a live
-- match's score is not among it: the model reads completed matches' results).
SELECT id, team_a_id, team_b_id, status = 'completed', status = 'cancelled', scheduled_at, result_known_at,
       winner_team_id, result_type, format,
       CASE WHEN status = 'completed' THEN score_a END, CASE WHEN status = 'completed' THEN score_b END
FROM {{.DB}}.out_matches WHERE id IN (SELECT id FROM memory.scope_ids);

-- The matches the model sees: not cancelled; completed ones only when played
-- to a winner (forfeits and walkovers carry no skill signal). With the
-- format and the maps won (eo_model 2.0's format-aware series probability
-- and its map-level rating). A result is used from when it became known
-- (result_known_at), not from its (possibly estimated) ended_at.
SELECT CAST(id AS VARCHAR), CAST(team_a_id AS VARCHAR), CAST(team_b_id AS VARCHAR), status = 'completed',
       scheduled_at, coalesce(result_known_at, scheduled_at), coalesce(winner_team_id = team_a_id, false),
       coalesce(format, ''), coalesce(score_a, 0), coalesce(score_b, 0)
FROM out_matches
WHERE status <> 'cancelled' AND team_a_id <> team_b_id
  AND (status <> 'completed' OR (winner_team_id IS NOT NULL AND coalesce(result_type, 'played') = 'played'))
ORDER BY scheduled_at, id

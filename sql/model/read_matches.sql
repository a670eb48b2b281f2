-- The matches the model sees: not cancelled; completed ones only when played
-- to a winner (forfeits and walkovers carry no skill signal).
SELECT CAST(id AS VARCHAR), CAST(team_a_id AS VARCHAR), CAST(team_b_id AS VARCHAR), status = 'completed',
       scheduled_at, coalesce(ended_at, scheduled_at), coalesce(winner_team_id = team_a_id, false)
FROM out_matches
WHERE status <> 'cancelled' AND team_a_id <> team_b_id
  AND (status <> 'completed' OR (winner_team_id IS NOT NULL AND coalesce(result_type, 'played') = 'played'))
ORDER BY scheduled_at, id

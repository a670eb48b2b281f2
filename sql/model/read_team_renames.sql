-- Every name a team took after its first (a rename resets roster continuity).
SELECT CAST(team_id AS VARCHAR), valid_from FROM out_team_names
QUALIFY valid_from > min(valid_from) OVER (PARTITION BY team_id)
ORDER BY 1, 2

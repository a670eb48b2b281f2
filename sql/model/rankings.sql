-- out_rankings from the boards' rows, with names, slugs and regions; and
-- out_teams.own_rank.
CREATE OR REPLACE TABLE out_rankings AS
SELECT r.entity_type,
       CASE r.entity_type WHEN 'team' THEN 'glicko2_conservative' ELSE 'rating' END AS metric,
       '3mo' AS "window", r.rank, CAST(r.entity_id AS UUID) AS entity_id,
       coalesce(t.name, p.name) AS name, coalesce(t.slug, p.slug) AS slug,
       CASE r.entity_type WHEN 'team' THEN t.region ELSE pt.region END AS region,
       p.role, p.team_id, r.value, r.rating, r.rd, r.matches, r.previous_rank
FROM model_rank_rows r
LEFT JOIN out_teams t ON r.entity_type = 'team' AND t.id = CAST(r.entity_id AS UUID)
LEFT JOIN out_players p ON r.entity_type = 'player' AND p.id = CAST(r.entity_id AS UUID)
-- a player's region: the current team's, else (no current team) the team of their latest map line
LEFT JOIN (
  SELECT s.player_id, s.team_id FROM out_player_stats s JOIN out_matches m ON m.id = s.match_id
  WHERE m.status = 'completed' AND CAST(s.player_id AS VARCHAR) IN (SELECT entity_id FROM model_rank_rows WHERE entity_type = 'player')
  QUALIFY row_number() OVER (PARTITION BY s.player_id ORDER BY m.scheduled_at DESC, s.match_id DESC, s.team_id) = 1
) lt ON lt.player_id = p.id
LEFT JOIN out_teams pt ON pt.id = coalesce(p.team_id, lt.team_id);
DROP TABLE model_rank_rows;
UPDATE out_teams SET own_rank = NULL;
UPDATE out_teams SET own_rank = r.rank FROM out_rankings r
WHERE r.entity_type = 'team' AND r.entity_id = out_teams.id;

-- Match status and scores from the latest update, winner, start and end (and
-- whether an upstream without times made them estimates), when the result
-- became known, the
-- list-row names, and data_available (each flag true iff the sub-resource has
-- rows). out_odds may not exist yet when odds are not computed; odds_matches
-- is created by the pipeline before this step (empty when there are none).
CREATE OR REPLACE TEMP TABLE last_event AS
SELECT * FROM out_match_events
QUALIFY row_number() OVER (PARTITION BY match_id ORDER BY seq DESC) = 1;

CREATE OR REPLACE TEMP TABLE event_times AS
SELECT match_id,
       min(changed_at) FILTER (WHERE status IN ('live', 'completed')) AS started_at,
       coalesce(bool_or(times_estimated) FILTER (WHERE status IN ('live', 'completed')), false) AS times_estimated,
       max(changed_at) AS last_changed
FROM out_match_events GROUP BY match_id;

CREATE OR REPLACE TEMP TABLE has_rows AS
SELECT m.id AS match_id,
  EXISTS (SELECT 1 FROM out_map_results x WHERE x.match_id = m.id) AS has_maps,
  EXISTS (SELECT 1 FROM n_player_stats x WHERE x.match_id = m.id) AS has_stats,
  EXISTS (SELECT 1 FROM n_player_stats x WHERE x.match_id = m.id AND x.map_number IS NOT NULL) AS has_map_stats,
  EXISTS (SELECT 1 FROM out_vetoes x WHERE x.match_id = m.id) AS has_vetoes,
  EXISTS (SELECT 1 FROM out_rounds x WHERE x.match_id = m.id) AS has_rounds,
  (EXISTS (SELECT 1 FROM out_depth_weapons x WHERE x.match_id = m.id)
   OR EXISTS (SELECT 1 FROM out_depth_grenades x WHERE x.match_id = m.id)
   OR EXISTS (SELECT 1 FROM out_depth_hitgroups x WHERE x.match_id = m.id)
   OR EXISTS (SELECT 1 FROM out_depth_duels x WHERE x.match_id = m.id)
   OR EXISTS (SELECT 1 FROM out_depth_flashes x WHERE x.match_id = m.id)) AS has_depth,
  EXISTS (SELECT 1 FROM out_lineups x WHERE x.match_id = m.id) AS has_lineups,
  EXISTS (SELECT 1 FROM odds_matches x WHERE x.match_id = m.id) AS has_odds
FROM n_matches m;

CREATE OR REPLACE TABLE out_matches AS
SELECT m.id, m.game_id, m.tournament_id, m.team_a_id, m.team_b_id, m.format,
       coalesce(e.status, 'scheduled') AS status, m.stage, m.scheduled_at,
       CASE WHEN e.status IN ('live', 'completed') THEN t.started_at END AS started_at,
       CASE WHEN e.status = 'completed' THEN e.changed_at END AS ended_at,
       CASE WHEN e.status = 'completed' THEN e.known_at END AS result_known_at,
       coalesce(e.status IN ('live', 'completed') AND t.times_estimated, false) AS times_estimated,
       CASE WHEN e.status IN ('live', 'completed') THEN coalesce(e.score_a, 0) END AS score_a,
       CASE WHEN e.status IN ('live', 'completed') THEN coalesce(e.score_b, 0) END AS score_b,
       CASE WHEN e.status = 'completed' AND e.score_a > e.score_b THEN m.team_a_id
            WHEN e.status = 'completed' AND e.score_b > e.score_a THEN m.team_b_id END AS winner_team_id,
       CASE WHEN e.status = 'completed' THEN coalesce(e.result_type, 'played') END AS result_type,
       CASE WHEN e.status = 'live' THEN CAST(e.live_state AS VARCHAR) END AS live_state,
       greatest(m.changed_at, coalesce(t.last_changed, m.changed_at)) AS changed_at,
       ta.name AS team_a_name, tb.name AS team_b_name, ta.short_name AS team_a_short, tb.short_name AS team_b_short,
       tr.name AS tournament_name,
       h.has_maps, h.has_stats, h.has_map_stats, h.has_vetoes, h.has_rounds, h.has_depth, h.has_lineups, h.has_odds
FROM n_matches m
LEFT JOIN last_event e ON e.match_id = m.id
LEFT JOIN event_times t ON t.match_id = m.id
JOIN has_rows h ON h.match_id = m.id
JOIN out_teams ta ON ta.id = m.team_a_id
JOIN out_teams tb ON tb.id = m.team_b_id
JOIN out_tournaments tr ON tr.id = m.tournament_id;

-- team_profiles and team_map_profiles: each team's record, computed once per
-- snapshot (the /teams/{id}/profile payload; data scientists read the same
-- numbers in the Parquet).
--
-- Sources and rules (every _pct is 0 to 100 with one decimal, rounded half
-- away from zero, NULL when its denominator is 0; on team_map_profiles 0):
--   matches: completed matches with a winner (match_win_pct, first/last_match_at);
--   maps: every map result, from both teams' sides (map_win_pct; overtime_pct
--     = maps with overtime / maps played; a map's round_win_pct = rounds won /
--     rounds played on it, from the map scores);
--   rounds: every round row (round_win_pct, ct_/t_round_win_pct by the
--     side played, pistol_win_pct);
--   vetoes: a map's pick_pct / ban_pct = the team's picks / bans of it over the
--     matches in which the team made a veto step.
-- A team appears when any source names it; others have no row (the API
-- serves zeros and nulls for them).
CREATE OR REPLACE MACRO eo_pct(num, den) AS
  CASE WHEN den = 0 OR den IS NULL THEN NULL ELSE round(1000 * CAST(num AS DOUBLE) / den) / 10 END;

CREATE OR REPLACE TEMP TABLE profile_map_sides AS
SELECT m.team_a_id AS team_id, r.map_name, r.score_a AS own, r.score_b AS opp, r.overtime_a IS NOT NULL AS overtime
FROM out_map_results r JOIN out_matches m ON m.id = r.match_id
UNION ALL
SELECT m.team_b_id, r.map_name, r.score_b, r.score_a, r.overtime_a IS NOT NULL
FROM out_map_results r JOIN out_matches m ON m.id = r.match_id;

CREATE OR REPLACE TABLE out_team_profiles AS
WITH sides AS (
  SELECT team_a_id AS team_id, winner_team_id = team_a_id AS won, scheduled_at
  FROM out_matches WHERE status = 'completed' AND winner_team_id IS NOT NULL
  UNION ALL
  SELECT team_b_id, winner_team_id = team_b_id, scheduled_at
  FROM out_matches WHERE status = 'completed' AND winner_team_id IS NOT NULL
), series AS (
  SELECT team_id, count(*) AS played, count(*) FILTER (WHERE won) AS won,
         min(scheduled_at) AS first_at, max(scheduled_at) AS last_at
  FROM sides GROUP BY team_id
), maps AS (
  SELECT team_id, count(*) AS played, count(*) FILTER (WHERE own > opp) AS won,
         count(*) FILTER (WHERE overtime) AS overtime
  FROM profile_map_sides GROUP BY team_id
), rounds AS (
  SELECT team_id, count(*) AS n, count(*) FILTER (WHERE won) AS won,
         count(*) FILTER (WHERE team_side = 'ct') AS ct, count(*) FILTER (WHERE team_side = 'ct' AND won) AS ct_won,
         count(*) FILTER (WHERE team_side <> 'ct') AS t, count(*) FILTER (WHERE team_side <> 'ct' AND won) AS t_won,
         count(*) FILTER (WHERE pistol_round) AS pistol, count(*) FILTER (WHERE pistol_round AND won) AS pistol_won
  FROM out_rounds GROUP BY team_id
), teams AS (
  SELECT team_id FROM series UNION SELECT team_id FROM maps UNION SELECT team_id FROM rounds
  UNION SELECT team_id FROM out_vetoes WHERE team_id IS NOT NULL
)
SELECT t.team_id,
       CAST(coalesce(s.played, 0) AS INTEGER) AS matches_played, CAST(coalesce(s.won, 0) AS INTEGER) AS matches_won,
       eo_pct(s.won, s.played) AS match_win_pct,
       CAST(coalesce(mp.played, 0) AS INTEGER) AS maps_played, CAST(coalesce(mp.won, 0) AS INTEGER) AS maps_won,
       eo_pct(mp.won, mp.played) AS map_win_pct,
       eo_pct(r.won, r.n) AS round_win_pct, eo_pct(r.ct_won, r.ct) AS ct_round_win_pct,
       eo_pct(r.t_won, r.t) AS t_round_win_pct, eo_pct(r.pistol_won, r.pistol) AS pistol_win_pct,
       eo_pct(mp.overtime, mp.played) AS overtime_pct,
       s.first_at AS first_match_at, s.last_at AS last_match_at
FROM teams t
LEFT JOIN series s USING (team_id)
LEFT JOIN maps mp USING (team_id)
LEFT JOIN rounds r USING (team_id);

CREATE OR REPLACE TABLE out_team_map_profiles AS
WITH played AS (
  SELECT team_id, map_name, count(*) AS played, count(*) FILTER (WHERE own > opp) AS won,
         sum(own + opp) AS rounds, sum(own) AS rounds_won
  FROM profile_map_sides GROUP BY team_id, map_name
), vetoed AS (
  SELECT team_id, map_name, count(*) FILTER (WHERE choice_type = 'pick') AS picks,
         count(*) FILTER (WHERE choice_type = 'ban') AS bans
  FROM out_vetoes WHERE team_id IS NOT NULL GROUP BY team_id, map_name
), veto_matches AS (
  SELECT team_id, count(DISTINCT match_id) AS n FROM out_vetoes WHERE team_id IS NOT NULL GROUP BY team_id
)
SELECT team_id, map_name,
       CAST(coalesce(p.played, 0) AS INTEGER) AS played, CAST(coalesce(p.won, 0) AS INTEGER) AS won,
       coalesce(eo_pct(p.won, p.played), 0) AS win_pct,
       coalesce(eo_pct(v.picks, vm.n), 0) AS pick_pct, coalesce(eo_pct(v.bans, vm.n), 0) AS ban_pct,
       coalesce(eo_pct(p.rounds_won, p.rounds), 0) AS round_win_pct
FROM played p
FULL JOIN vetoed v USING (team_id, map_name)
LEFT JOIN veto_matches vm USING (team_id);

DROP TABLE profile_map_sides;

-- player_summaries and player_map_summaries: each player's career over the
-- per-map stat lines of the snapshot (the /players/{id}/stats payload; the
-- whole-match aggregate lines are not counted twice).
--
-- Rules: adr, rating and kast are means weighted by rounds played (adr to 1
-- decimal, rating to 2, kast to 3), NULL without rounds; kd_ratio = kills /
-- deaths to 2 decimals, NULL without deaths; headshot_pct = headshots / kills
-- over the lines that report headshots (0 to 100, 1 decimal); assists,
-- first_kills, first_deaths and clutches sum the lines that report them,
-- NULL when none does; last_match_at is the latest match scheduled. Per map
-- (by the map result's name): maps, rounds-weighted rating and adr (0
-- without rounds), kd_ratio. Weighted sums add the lines in the snapshot's
-- player_stats order, so a re-run gives the same bits.
CREATE OR REPLACE TEMP TABLE summary_lines AS
SELECT s.player_id, s.match_id, s.map_number, s.team_id, s.rounds_played AS r, s.kills, s.deaths, s.assists,
       coalesce(s.adr, 0) * s.rounds_played AS dmg, coalesce(s.rating, 0) * s.rounds_played AS rated,
       s.kast * s.rounds_played AS kast_w, CASE WHEN s.kast IS NOT NULL THEN s.rounds_played END AS kast_r,
       s.headshots, CASE WHEN s.headshots IS NOT NULL THEN s.kills END AS hs_kills,
       s.first_kills, s.first_deaths, s.clutches, m.scheduled_at, mr.map_name
FROM out_player_stats s
LEFT JOIN out_matches m ON m.id = s.match_id
LEFT JOIN out_map_results mr ON mr.match_id = s.match_id AND mr.map_number = s.map_number
WHERE s.map_number IS NOT NULL;

CREATE OR REPLACE TABLE out_player_summaries AS
WITH
-- The weighted sums, added in player_stats order: a running sum over that
-- order (a window spills to disk; an ordered aggregate keeps every group in
-- memory), read at each player's last line. The same additions in the same
-- order as sum(x ORDER BY ...): the same bits.
run AS (
  SELECT player_id,
         sum(dmg) OVER w AS dmg, sum(rated) OVER w AS rated, sum(kast_w) OVER w AS kast_w,
         row_number() OVER w AS i, count(*) OVER (PARTITION BY player_id) AS n
  FROM summary_lines
  WINDOW w AS (PARTITION BY player_id ORDER BY match_id, map_number, team_id ROWS UNBOUNDED PRECEDING)),
w AS (SELECT player_id, dmg, rated, kast_w FROM run WHERE i = n),
-- matches played: distinct (player, match) pairs, grouped (spills) rather
-- than count(DISTINCT) (kept in memory per player)
pm AS (SELECT player_id, count(*) AS matches FROM (SELECT DISTINCT player_id, match_id FROM summary_lines) GROUP BY player_id),
s AS (
  SELECT player_id, count(*) AS maps, sum(r) AS rounds,
         sum(kills) AS kills, sum(deaths) AS deaths, sum(assists) AS assists, sum(kast_r) AS kast_r,
         sum(headshots) AS hs, sum(hs_kills) AS hs_kills,
         sum(first_kills) AS first_kills, sum(first_deaths) AS first_deaths, sum(clutches) AS clutches,
         max(scheduled_at) AS last_match_at
  FROM summary_lines GROUP BY player_id),
p AS (SELECT * FROM s JOIN pm USING (player_id) JOIN w USING (player_id))
SELECT player_id, CAST(matches AS INTEGER) AS matches_played, CAST(maps AS INTEGER) AS maps_played,
       CAST(rounds AS INTEGER) AS rounds_played, CAST(kills AS INTEGER) AS kills, CAST(deaths AS INTEGER) AS deaths,
       CAST(assists AS INTEGER) AS assists,
       CASE WHEN deaths > 0 THEN round(CAST(kills AS DOUBLE) / deaths * 100) / 100 END AS kd_ratio,
       CASE WHEN rounds > 0 THEN round(dmg / rounds * 10) / 10 END AS adr,
       CASE WHEN kast_r > 0 THEN round(kast_w / kast_r * 1000) / 1000 END AS kast,
       CASE WHEN rounds > 0 THEN round(rated / rounds * 100) / 100 END AS rating,
       eo_pct(hs, hs_kills) AS headshot_pct,
       CAST(first_kills AS INTEGER) AS first_kills, CAST(first_deaths AS INTEGER) AS first_deaths,
       CAST(clutches AS INTEGER) AS clutches, last_match_at
FROM p;

CREATE OR REPLACE TABLE out_player_map_summaries AS
WITH run AS (
  SELECT player_id, map_name, sum(dmg) OVER w AS dmg, sum(rated) OVER w AS rated,
         row_number() OVER w AS i, count(*) OVER (PARTITION BY player_id, map_name) AS n
  FROM summary_lines WHERE map_name IS NOT NULL
  WINDOW w AS (PARTITION BY player_id, map_name ORDER BY match_id, map_number, team_id ROWS UNBOUNDED PRECEDING)),
p AS (
  SELECT player_id, map_name, count(*) AS maps, sum(r) AS rounds, sum(kills) AS kills, sum(deaths) AS deaths,
         any_value(w.dmg) AS dmg, any_value(w.rated) AS rated
  FROM summary_lines JOIN (SELECT * FROM run WHERE i = n) w USING (player_id, map_name)
  GROUP BY player_id, map_name)
SELECT player_id, map_name, CAST(maps AS INTEGER) AS maps,
       CASE WHEN rounds > 0 THEN round(rated / rounds * 100) / 100 ELSE 0 END AS rating,
       CASE WHEN rounds > 0 THEN round(dmg / rounds * 10) / 10 ELSE 0 END AS adr,
       CASE WHEN deaths > 0 THEN round(CAST(kills AS DOUBLE) / deaths * 100) / 100 END AS kd_ratio
FROM p;

DROP TABLE summary_lines;

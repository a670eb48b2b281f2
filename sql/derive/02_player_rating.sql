-- The service's player rating on every stat line (map and whole-match rows).
--
-- Each input is taken per round and divided by the average map line's
-- value, so an average line scores 1.00 on each component; the rating is
-- the weighted mean of the components (weights sum to 1):
--   0.30 kills per round / 0.67        0.15 survival (1 - deaths/round) / 0.33
--   0.25 ADR / 75                      0.05 assists per round / 0.27
--   0.10 KAST / 0.79                   0.10 multi-kill rounds (2k + 2*3k + 3*4k + 4*5k)/round / 0.18
--   0.05 opening duels: 1 + 2*(first kills - first deaths)/round
-- An input the upstream did not provide (assists, KAST, multi-kills, opening
-- duels) scores exactly 1.00 (neutral) rather than 0: a line without assists
-- (imported HLTV data) is not rated as if the player had none.
-- The divisors are the mean per-line values of the default synthetic world's
-- 79,260 map lines (kills/round 0.670, deaths/round 0.670, ADR 75.0,
-- assists/round 0.268, KAST 0.786, multi-kill score 0.181), so the mean map
-- line rates 1.00 there (see MODEL.md; the earlier divisors 0.68/0.32/76/
-- 0.13/0.72/0.24 gave a mean of 1.03). Re-derive them on real data.
CREATE OR REPLACE TABLE out_player_stats AS
SELECT s.match_id, s.map_number, s.player_id, s.team_id, s.rounds_played,
       s.kills, s.deaths, s.assists, round(s.adr, 1) AS adr, s.kast, s.headshots, s.first_kills, s.first_deaths,
       s.trade_kills, s.trade_deaths, s.clutches, s.multikills_2k, s.multikills_3k, s.multikills_4k,
       s.multikills_5k, s.damage, s.utility_value,
       round(
         0.30 * (s.kills / r) / 0.67
       + 0.15 * greatest(0, 1 - s.deaths / r) / 0.33
       + 0.25 * s.adr / 75
       + 0.05 * coalesce((s.assists / r) / 0.27, 1)
       + 0.10 * coalesce(s.kast / 0.79, 1)
       + 0.10 * coalesce(((s.multikills_2k + 2 * s.multikills_3k + 3 * s.multikills_4k + 4 * s.multikills_5k) / r) / 0.18, 1)
       + 0.05 * coalesce(1 + 2 * (s.first_kills - s.first_deaths) / r, 1)
       , 2) AS rating
FROM (SELECT *, CAST(greatest(rounds_played, 1) AS DOUBLE) AS r FROM n_player_stats) s;

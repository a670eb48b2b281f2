-- Normalised tables with service ids (id_map) and slugs (slug_map). Upstream
-- keys stop here: no out_ table carries one. Column order is the published
-- schema (see SNAPSHOT.md).
CREATE OR REPLACE TABLE out_games AS
SELECT i.id, 'cs2' AS slug, 'Counter-Strike 2' AS name
FROM id_map i WHERE i.kind = 'game' AND i.ukey = 'cs2';

CREATE OR REPLACE TEMP TABLE game AS SELECT id AS game_id FROM out_games;

CREATE OR REPLACE TABLE out_tournaments AS
SELECT i.id, g.game_id, s.slug, t.name, t.tier, t.region,
       t.starts_at, t.ends_at, t.prize_pool_usd, coalesce(t.location, '') AS location, t.is_lan,
       t.changed_at
FROM v_tournaments t
JOIN id_map i ON i.kind = 'tournament' AND i.ukey = t.id
JOIN slug_map s ON s.kind = 'tournament' AND s.ukey = t.id
CROSS JOIN game g;

-- every name a team has carried, with when it first appeared (renames)
CREATE OR REPLACE TABLE out_team_names AS
SELECT i.id AS team_id, n.name, n.valid_from
FROM (SELECT id, name, min(changed_at) AS valid_from FROM c_teams GROUP BY id, name) n
JOIN id_map i ON i.kind = 'team' AND i.ukey = n.id
WHERE n.id IN (SELECT id FROM v_teams);

CREATE OR REPLACE TABLE out_teams AS
SELECT i.id, g.game_id, s.slug, t.name, coalesce(t.short_name, '') AS short_name, t.region,
       upper(coalesce(t.country_code, '')) AS country_code, '' AS logo_url,
       CAST(NULL AS INTEGER) AS own_rank, t.external_rank,
       (SELECT max(valid_from) FROM out_team_names n WHERE n.team_id = i.id) AS name_since,
       t.changed_at
FROM v_teams t
JOIN id_map i ON i.kind = 'team' AND i.ukey = t.id
JOIN slug_map s ON s.kind = 'team' AND s.ukey = t.id
CROSS JOIN game g;

CREATE OR REPLACE TABLE out_players AS
SELECT i.id, g.game_id, s.slug, p.nickname AS name, p.nickname AS short_name,
       coalesce(p.real_name, '') AS real_name, coalesce(p.nationality, '') AS nationality,
       upper(coalesce(p.country_code, '')) AS country_code, p.role,
       ti.id AS team_id, p.changed_at
FROM v_players p
JOIN id_map i ON i.kind = 'player' AND i.ukey = p.id
LEFT JOIN id_map ti ON ti.kind = 'team' AND ti.ukey = p.team_id
JOIN slug_map s ON s.kind = 'player' AND s.ukey = p.id
CROSS JOIN game g;

CREATE OR REPLACE TABLE out_match_events AS
SELECT mi.id AS match_id,
       CAST(row_number() OVER (PARTITION BY u.match_id ORDER BY u.changed_at, u.batch_seq, u.line_no) AS INTEGER) AS seq,
       u.status, u.score_a, u.score_b, u.result_type, CAST(u.live_state AS VARCHAR) AS live_state, u.changed_at,
       greatest(coalesce(u.known_at, u.changed_at), u.changed_at) AS known_at,
       coalesce(u.times_estimated, false) AS times_estimated
FROM v_match_updates u
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = u.match_id;

CREATE OR REPLACE TABLE n_matches AS
SELECT mi.id, g.game_id, ti.id AS tournament_id, ai.id AS team_a_id, bi.id AS team_b_id,
       m.format, coalesce(m.stage, '') AS stage, m.scheduled_at, m.changed_at
FROM v_matches m
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = m.id
JOIN id_map ti ON ti.kind = 'tournament' AND ti.ukey = m.tournament_id
JOIN id_map ai ON ai.kind = 'team' AND ai.ukey = m.team_a_id
JOIN id_map bi ON bi.kind = 'team' AND bi.ukey = m.team_b_id
CROSS JOIN game g;

CREATE OR REPLACE TABLE out_map_results AS
SELECT mi.id AS match_id, r.map_number, r.map_name, r.score_a, r.score_b,
       r.first_half_a, r.first_half_b, r.second_half_a, r.second_half_b, r.overtime_a, r.overtime_b,
       r.first_half_side_a, 'played' AS status, r.score_a + r.score_b AS rounds_played,
       r.started_at, r.changed_at
FROM v_map_results r JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = r.match_id;

CREATE OR REPLACE TABLE out_vetoes AS
SELECT mi.id AS match_id, v."order", ti.id AS team_id, v.choice_type, v.map_name
FROM v_vetoes v
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = v.match_id
LEFT JOIN id_map ti ON ti.kind = 'team' AND ti.ukey = v.team_id;

CREATE OR REPLACE TABLE n_player_stats AS
SELECT mi.id AS match_id, s.map_number, pi.id AS player_id, ti.id AS team_id, s.rounds_played,
       s.kills, s.deaths, s.assists, s.adr, s.kast, s.headshots, s.first_kills, s.first_deaths,
       s.trade_kills, s.trade_deaths, s.clutches, s.multikills_2k, s.multikills_3k, s.multikills_4k,
       s.multikills_5k, s.damage, s.utility_value, s.changed_at
FROM v_player_stats s
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = s.match_id
JOIN id_map pi ON pi.kind = 'player' AND pi.ukey = s.player_id
JOIN id_map ti ON ti.kind = 'team' AND ti.ukey = s.team_id;

CREATE OR REPLACE TABLE out_rounds AS
SELECT mi.id AS match_id, r.map_number, r.round_number, ti.id AS team_id, r.team_side, r.won,
       r.economy_level, r.equipment_value, r.enemy_equipment_value, r.money_spent, r.kills, r.deaths,
       r.assists, r.damage, r.headshots, r.first_kills, r.first_deaths, r.trade_kills, r.trade_deaths,
       r.clutches, r.clutch_attempts, r.bomb_plants, r.bomb_defuses, r.flash_assists, r.utility_value,
       r.kast, r.pistol_round, r.end_reason, r.round_duration_ms
FROM v_rounds r
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = r.match_id
JOIN id_map ti ON ti.kind = 'team' AND ti.ukey = r.team_id;

CREATE OR REPLACE TABLE out_depth_weapons AS
SELECT mi.id AS match_id, d.map_number, pi.id AS player_id, d.weapon, coalesce(d.weapon_class, '') AS weapon_class,
       d.kills, d.headshots, d.damage, d.shots, d.hits
FROM v_depth_weapons d
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = d.match_id
JOIN id_map pi ON pi.kind = 'player' AND pi.ukey = d.player_id;

CREATE OR REPLACE TABLE out_depth_grenades AS
SELECT mi.id AS match_id, d.map_number, pi.id AS player_id, d.grenade_name, d.thrown, d.damage, d.kills
FROM v_depth_grenades d
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = d.match_id
JOIN id_map pi ON pi.kind = 'player' AND pi.ukey = d.player_id;

CREATE OR REPLACE TABLE out_depth_hitgroups AS
SELECT mi.id AS match_id, d.map_number, pi.id AS player_id, d.hit_group, d.hits, d.damage
FROM v_depth_hitgroups d
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = d.match_id
JOIN id_map pi ON pi.kind = 'player' AND pi.ukey = d.player_id;

CREATE OR REPLACE TABLE out_depth_duels AS
SELECT mi.id AS match_id, d.map_number, pi.id AS player_id, oi.id AS opponent_id, d.kills, d.deaths
FROM v_depth_duels d
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = d.match_id
JOIN id_map pi ON pi.kind = 'player' AND pi.ukey = d.player_id
JOIN id_map oi ON oi.kind = 'player' AND oi.ukey = d.opponent_id;

CREATE OR REPLACE TABLE out_depth_flashes AS
SELECT mi.id AS match_id, d.map_number, pi.id AS player_id, d.thrown, d.enemies_blinded,
       d.teammates_blinded, d.blind_duration_ms, d.flash_assists
FROM v_depth_flashes d
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = d.match_id
JOIN id_map pi ON pi.kind = 'player' AND pi.ukey = d.player_id;

CREATE OR REPLACE TABLE out_lineups AS
WITH u AS (
  SELECT match_id, team_id, captured_at, unnest(CAST(player_ids AS VARCHAR[])) AS p,
         generate_subscripts(CAST(player_ids AS VARCHAR[]), 1) AS pos
  FROM v_lineups)
SELECT mi.id AS match_id, ti.id AS team_id, list(pi.id ORDER BY u.pos) AS player_ids,
       any_value(u.captured_at) AS captured_at
FROM u
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = u.match_id
JOIN id_map ti ON ti.kind = 'team' AND ti.ukey = u.team_id
JOIN id_map pi ON pi.kind = 'player' AND pi.ukey = u.p
GROUP BY mi.id, ti.id;

CREATE OR REPLACE TABLE out_streams AS
SELECT mi.id AS match_id, s.platform, s.channel, s.url, coalesce(s.language, '') AS language,
       coalesce(s.official, false) AS official
FROM v_streams s JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = s.match_id;

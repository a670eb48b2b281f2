-- Reference and plausibility checks on the candidate records: c_<entity>
-- holds every record that passed the per-line checks (stage.sql.tmpl), every
-- version of every key. A failing record is quarantined with its reason (in
-- bad); last-write-wins then picks each key's winner among the others (the
-- template winners makes v_<entity>). So a
-- rejected correction never replaces the record it corrects: the older valid
-- version wins and stays published, and with it every row that refers to it.
-- Parents are checked (and their winners picked) before children, and a
-- child is checked against its parent's winners: a child of a parent of
-- which no version survives is quarantined too ("unknown match_id").
-- pipelines.run.check renders it: spec "<entity>" is the entity's raw.Spec,
-- and each entity's winners are picked exactly once.
CREATE OR REPLACE TEMP TABLE bad (entity VARCHAR, batch_seq INTEGER, line_no INTEGER, reason VARCHAR);

-- no reference to check
{{template "winners" (spec "tournaments")}}
{{template "winners" (spec "teams")}}
{{template "winners" (spec "books")}}

-- players: a current team, when given, must exist
INSERT INTO bad
SELECT 'players', p.batch_seq, p.line_no, 'unknown team_id'
FROM c_players p LEFT JOIN v_teams t ON t.id = p.team_id
WHERE coalesce(p.team_id, '') <> '' AND t.id IS NULL;
{{template "winners" (spec "players")}}

-- matches: known tournament and teams, two different teams
INSERT INTO bad
SELECT 'matches', m.batch_seq, m.line_no, concat_ws('; ',
    CASE WHEN t.id IS NULL THEN 'unknown tournament_id' END,
    CASE WHEN a.id IS NULL THEN 'unknown team_a_id' END,
    CASE WHEN b.id IS NULL THEN 'unknown team_b_id' END,
    CASE WHEN m.team_a_id = m.team_b_id THEN 'team_a_id equals team_b_id' END)
FROM c_matches m
LEFT JOIN v_tournaments t ON t.id = m.tournament_id
LEFT JOIN v_teams a ON a.id = m.team_a_id
LEFT JOIN v_teams b ON b.id = m.team_b_id
WHERE t.id IS NULL OR a.id IS NULL OR b.id IS NULL OR m.team_a_id = m.team_b_id;
{{template "winners" (spec "matches")}}

-- the winning matches' formats and teams, for the children of a match (the
-- plausibility checks, eo_*_problem, are package raw's: pipelines/rules.go)
CREATE OR REPLACE TEMP TABLE match_formats AS SELECT id, format FROM v_matches;
CREATE OR REPLACE TEMP TABLE match_teams AS
SELECT id AS match_id, team_a_id AS team_id FROM v_matches UNION ALL SELECT id, team_b_id FROM v_matches;

-- match updates: a known match, a possible score for its format, and team
-- kills (optional) on both sides or neither, not negative, only once the
-- match is live or completed
INSERT INTO bad
SELECT 'match_updates', batch_seq, line_no, why FROM (
  SELECT u.batch_seq, u.line_no,
    CASE WHEN n.id IS NULL THEN 'unknown match_id'
         ELSE eo_update_problem(u.status, u.result_type, u.score_a, u.score_b, u.kills_a, u.kills_b, n.format) END AS why
  FROM c_match_updates u LEFT JOIN match_formats n ON n.id = u.match_id)
WHERE why <> '';
{{template "winners" (spec "match_updates")}}

-- map results: a known match, a map number inside the format, a possible score
INSERT INTO bad
SELECT 'map_results', batch_seq, line_no, why FROM (
  SELECT r.batch_seq, r.line_no,
    CASE WHEN n.id IS NULL THEN 'unknown match_id'
         ELSE eo_map_problem(r.map_number, r.map_name, r.score_a, r.score_b, r.first_half_a, r.first_half_b,
                             r.second_half_a, r.second_half_b, r.overtime_a, r.overtime_b, n.format) END AS why
  FROM c_map_results r LEFT JOIN match_formats n ON n.id = r.match_id)
WHERE why <> '';
{{template "winners" (spec "map_results")}}

-- vetoes: a known match; a child row naming a team must name one of its
-- match's two teams
INSERT INTO bad
SELECT 'vetoes', v.batch_seq, v.line_no,
  CASE WHEN n.id IS NULL THEN 'unknown match_id'
       WHEN v.choice_type = 'decider' AND coalesce(v.team_id, '') <> '' THEN 'decider with a team_id'
       WHEN v.choice_type <> 'decider' AND coalesce(v.team_id, '') = '' THEN 'missing team_id'
       ELSE 'team_id not in the match' END
FROM c_vetoes v LEFT JOIN match_formats n ON n.id = v.match_id
WHERE n.id IS NULL
   OR (v.choice_type = 'decider') = (coalesce(v.team_id, '') <> '')
   OR (coalesce(v.team_id, '') <> '' AND (v.match_id, v.team_id) NOT IN (SELECT (match_id, team_id) FROM match_teams));
{{template "winners" (spec "vetoes")}}

INSERT INTO bad
SELECT 'player_stats', s.batch_seq, s.line_no,
  CASE WHEN n.id IS NULL THEN 'unknown match_id'
       WHEN p.id IS NULL THEN 'unknown player_id'
       WHEN (s.match_id, s.team_id) NOT IN (SELECT (match_id, team_id) FROM match_teams) THEN 'team_id not in the match'
       ELSE 'impossible value' END
FROM c_player_stats s
LEFT JOIN match_formats n ON n.id = s.match_id
LEFT JOIN v_players p ON p.id = s.player_id
WHERE n.id IS NULL OR p.id IS NULL
   OR (s.match_id, s.team_id) NOT IN (SELECT (match_id, team_id) FROM match_teams)
   OR s.kills < 0 OR s.deaths < 0 OR s.assists < 0 OR s.adr < 0 OR s.rounds_played < 0
   OR s.kast < 0 OR s.kast > 1 OR s.map_number < 1;
{{template "winners" (spec "player_stats")}}

INSERT INTO bad
SELECT 'rounds', r.batch_seq, r.line_no,
  CASE WHEN n.id IS NULL THEN 'unknown match_id'
       WHEN (r.match_id, r.team_id) NOT IN (SELECT (match_id, team_id) FROM match_teams) THEN 'team_id not in the match'
       ELSE 'impossible value' END
FROM c_rounds r LEFT JOIN match_formats n ON n.id = r.match_id
WHERE n.id IS NULL
   OR (r.match_id, r.team_id) NOT IN (SELECT (match_id, team_id) FROM match_teams)
   OR r.round_number < 1 OR r.map_number < 1 OR r.kast < 0 OR r.kast > 5 OR r.kills < 0 OR r.deaths < 0
   OR r.round_duration_ms < 0;
{{template "winners" (spec "rounds")}}

-- depth rows: a known match and player (and a known opponent for a duel:
-- normalise joins it, so an unknown one would drop the row silently)
INSERT INTO bad
SELECT e, batch_seq, line_no, reason FROM (
  SELECT 'depth_weapons' AS e, d.batch_seq, d.line_no, d.match_id, d.player_id, NULL AS opponent_id FROM c_depth_weapons d
  UNION ALL SELECT 'depth_grenades', d.batch_seq, d.line_no, d.match_id, d.player_id, NULL FROM c_depth_grenades d
  UNION ALL SELECT 'depth_hitgroups', d.batch_seq, d.line_no, d.match_id, d.player_id, NULL FROM c_depth_hitgroups d
  UNION ALL SELECT 'depth_duels', d.batch_seq, d.line_no, d.match_id, d.player_id, d.opponent_id FROM c_depth_duels d
  UNION ALL SELECT 'depth_flashes', d.batch_seq, d.line_no, d.match_id, d.player_id, NULL FROM c_depth_flashes d
) x
CROSS JOIN LATERAL (SELECT CASE
    WHEN x.match_id NOT IN (SELECT id FROM match_formats) THEN 'unknown match_id'
    WHEN x.player_id NOT IN (SELECT id FROM v_players) THEN 'unknown player_id'
    WHEN x.opponent_id NOT IN (SELECT id FROM v_players) THEN 'unknown opponent_id' END AS reason)
WHERE reason IS NOT NULL;
{{template "winners" (spec "depth_weapons")}}
{{template "winners" (spec "depth_grenades")}}
{{template "winners" (spec "depth_hitgroups")}}
{{template "winners" (spec "depth_duels")}}
{{template "winners" (spec "depth_flashes")}}

-- lineups: a team of the match, a list of known players
CREATE OR REPLACE TEMP TABLE lineup_unknown AS
SELECT DISTINCT batch_seq, line_no FROM (
  SELECT batch_seq, line_no, unnest(TRY_CAST(player_ids AS VARCHAR[])) AS p FROM c_lineups)
WHERE p NOT IN (SELECT id FROM v_players);
INSERT INTO bad
SELECT 'lineups', l.batch_seq, l.line_no,
  CASE WHEN l.match_id NOT IN (SELECT id FROM match_formats) THEN 'unknown match_id'
       WHEN (l.match_id, l.team_id) NOT IN (SELECT (match_id, team_id) FROM match_teams) THEN 'team_id not in the match'
       WHEN TRY_CAST(l.player_ids AS VARCHAR[]) IS NULL THEN 'invalid player_ids'
       ELSE 'unknown player id in player_ids' END
FROM c_lineups l
WHERE l.match_id NOT IN (SELECT id FROM match_formats)
   OR (l.match_id, l.team_id) NOT IN (SELECT (match_id, team_id) FROM match_teams)
   OR TRY_CAST(l.player_ids AS VARCHAR[]) IS NULL
   OR (l.batch_seq, l.line_no) IN (SELECT (batch_seq, line_no) FROM lineup_unknown);
{{template "winners" (spec "lineups")}}

INSERT INTO bad
SELECT 'streams', s.batch_seq, s.line_no, 'unknown match_id'
FROM c_streams s WHERE s.match_id NOT IN (SELECT id FROM match_formats);
{{template "winners" (spec "streams")}}

-- price captures: exactly one parent, known; a decimal price above 1 and an
-- outcome of the market (an outright's: a known team)
INSERT INTO bad
SELECT 'price_captures', batch_seq, line_no, why FROM (
  SELECT c.batch_seq, c.line_no,
    CASE WHEN (coalesce(c.match_id, '') = '') = (coalesce(c.tournament_id, '') = '') THEN 'needs exactly one of match_id and tournament_id'
         WHEN coalesce(c.match_id, '') <> '' AND c.match_id NOT IN (SELECT id FROM match_formats) THEN 'unknown match_id'
         WHEN coalesce(c.tournament_id, '') <> '' AND c.tournament_id NOT IN (SELECT id FROM v_tournaments) THEN 'unknown tournament_id'
         WHEN c.book NOT IN (SELECT id FROM v_books) THEN 'unknown book'
         WHEN c.market = 'outright' AND c.outcome NOT IN (SELECT id FROM v_teams) AND eo_price_problem(c.market, c.outcome, c.price) = ''
           THEN 'outcome does not fit the market'
         ELSE eo_price_problem(c.market, c.outcome, c.price) END AS why
  FROM c_price_captures c)
WHERE why <> '';
{{template "winners" (spec "price_captures")}}

INSERT INTO quarantine
SELECT b.batch_seq, b.entity, b.line_no, b.reason, NULL FROM bad b;

{{- /* The latest surviving candidate per upstream key (last write wins by the
upstream's change time, then by landing order: the later batch, then the
later line), or every candidate of an entity without a key. */}}
{{- define "winners"}}
CREATE OR REPLACE TABLE v_{{.Entity}} AS SELECT * FROM c_{{.Entity}} c
WHERE NOT EXISTS (SELECT 1 FROM bad b WHERE b.entity = '{{.Entity}}' AND b.batch_seq = c.batch_seq AND b.line_no = c.line_no)
{{- if .Key}}
QUALIFY row_number() OVER (PARTITION BY {{range $i, $k := .Key}}{{if $i}}, {{end}}"{{$k}}"{{end}} ORDER BY "{{.Order}}" DESC, batch_seq DESC, line_no DESC) = 1
{{- end}};
{{- end}}

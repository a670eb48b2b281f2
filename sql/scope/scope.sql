-- The scope (pipelines.run.scope): the matches the new lines touch and
-- every match of their tournaments (an outright settles on its
-- tournament's last match), by upstream key; then the state's records of
-- the scope join the new lines as candidates, so the checks and
-- last-write-wins see every record of those matches. Parents are taken
-- whole. On a new state (empty) every match is new: the scope is all.

{{- if .All}}
-- a new state's tables, empty (a state that lacks one is damaged: the run
-- fails, and runs again on a new state)
{{- range .Entities}}
CREATE TABLE st.v_{{.}} AS SELECT * FROM c_{{.}} WHERE false;
{{- end}}
CREATE TABLE st.c_teams AS SELECT * FROM c_teams WHERE false;
{{- end}}

-- every match and tournament the new lines name
CREATE OR REPLACE TEMP TABLE new_refs AS
SELECT nullif(id, '') AS m, NULL AS t FROM c_matches
{{- range .Children}}
UNION ALL SELECT nullif(match_id, ''), NULL FROM c_{{.E}}
{{- end}}
UNION ALL SELECT NULL, nullif(tournament_id, '') FROM c_price_captures;

CREATE OR REPLACE TEMP TABLE known_matches AS
SELECT id, tournament_id FROM st.v_matches UNION ALL SELECT id, tournament_id FROM c_matches;

CREATE OR REPLACE TABLE scope_tu AS
SELECT DISTINCT tournament_id AS ukey FROM known_matches WHERE id IN (SELECT m FROM new_refs)
UNION SELECT t FROM new_refs WHERE t IS NOT NULL;

CREATE OR REPLACE TABLE scope_u AS
SELECT DISTINCT id AS ukey FROM known_matches WHERE tournament_id IN (SELECT ukey FROM scope_tu);

{{- range .Parents}}
INSERT INTO c_{{.}} SELECT * FROM st.v_{{.}};
{{- end}}
INSERT INTO c_matches SELECT * FROM st.v_matches WHERE id IN (SELECT ukey FROM scope_u);
{{- range .Children}}
INSERT INTO c_{{.E}} SELECT * FROM st.v_{{.E}} WHERE {{.Pred}};
{{- end}}
DROP TABLE new_refs;
DROP TABLE known_matches;

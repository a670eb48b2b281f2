-- The predicates selecting the scope's rows (pipelines.scopeRows), by what
-- keys a table: a match's (or an outright's tournament's) rows by service
-- id, or a raw entity's records by upstream key.
{{define "id"}}id IN (SELECT id FROM memory.scope_ids){{end}}
{{define "match"}}match_id IN (SELECT id FROM memory.scope_ids){{end}}
{{define "odds"}}(match_id IN (SELECT id FROM memory.scope_ids) OR (match_id IS NULL AND tournament_id IN (SELECT id FROM memory.scope_tours))){{end}}
{{define "upstream_id"}}id IN (SELECT ukey FROM memory.scope_u){{end}}
{{define "upstream_match"}}match_id IN (SELECT ukey FROM memory.scope_u){{end}}
{{define "upstream_odds"}}(match_id IN (SELECT ukey FROM memory.scope_u) OR tournament_id IN (SELECT ukey FROM memory.scope_tu)){{end}}
{{define "all"}}true{{end}}
{{define "touched_teams"}}team_id IN (SELECT id FROM memory.touched_teams){{end}}
{{define "touched_players"}}player_id IN (SELECT id FROM memory.touched_players){{end}}
{{define "parts_chunk"}}match_id IN (SELECT id FROM memory.parts_scope WHERE chunk = {{.}}){{end}}
{{define "parts_range"}}match_id >= {{quote .Lo}}{{if .Hi}} AND match_id < {{quote .Hi}}{{end}}{{end}}

-- The matches whose parts are rendered again, numbered into chunks in id
-- order: those of the changed segments of the part tables, else the scope's.
CREATE OR REPLACE TABLE parts_scope AS
SELECT id, CAST((row_number() OVER (ORDER BY id) - 1) // {{.Chunk}} AS BIGINT) AS chunk FROM (
{{- if .From}}
  {{- range $i, $t := .From}}{{if $i}} UNION{{end}} SELECT match_id AS id FROM {{$t}}{{end}}
{{- else}} SELECT id FROM scope_ids{{end}});

-- The scope's tables, merged into the state, are done with (on a new state
-- they hold every row).
{{- range .}}
DROP TABLE IF EXISTS memory.main.{{.}};
{{- end}}

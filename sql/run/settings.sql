-- The run's DuckDB settings (pipelines.run.open).
SET TimeZone = 'UTC';
SET temp_directory = {{quote .Temp}};
{{- if .Threads}}
SET threads = {{.Threads}};
{{- end}}
{{- if .Memory}}
SET memory_limit = {{quote .Memory}};
{{- end}}

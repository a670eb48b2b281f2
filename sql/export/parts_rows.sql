-- A part table's rows of one chunk of matches (Pred), for the render: from
-- the file the export wrote (ids text already) or from the scope's rows in
-- memory (ids as text).
COPY (
  SELECT *{{if .IDs}} REPLACE ({{range $i, $c := .IDs}}{{if $i}}, {{end}}CAST("{{$c.Name}}" AS VARCHAR{{if $c.List}}[]{{end}}) AS "{{$c.Name}}"{{end}}){{end}}
  FROM {{if .File}}read_parquet({{quote .File}}){{else}}memory.{{.Table}}{{end}} AS t WHERE {{.Pred}} ORDER BY {{.Order}})
TO {{quote .Path}} (FORMAT parquet);

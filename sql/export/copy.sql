-- One table's rows where Pred holds (t is the row) in the table's order,
-- ids as their canonical text (SNAPSHOT.md, Types), to a Parquet file.
COPY (
  SELECT *{{if .IDs}} REPLACE ({{range $i, $c := .IDs}}{{if $i}}, {{end}}CAST("{{$c.Name}}" AS VARCHAR{{if $c.List}}[]{{end}}) AS "{{$c.Name}}"{{end}}){{end}}
  FROM st.{{.Table}} AS t WHERE {{.Pred}} ORDER BY {{.Order}})
TO {{quote .Path}} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {{.Group}});

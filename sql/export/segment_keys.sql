SELECT {{range .Seg}}CAST({{.}} AS VARCHAR), {{end}}{{if eq (len .Seg) 1}}NULL{{end}} FROM {{.Table}};

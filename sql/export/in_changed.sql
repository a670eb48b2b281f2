EXISTS (SELECT 1 FROM {{.Changed}} AS s WHERE {{range $i, $c := .Seg}}{{if $i}} AND {{end}}s.{{$c}} IS NOT DISTINCT FROM t.{{$c}}{{end}})

-- An empty state table takes the scope's rows as they are (with the
-- digests of its segments, when it has segments).
INSERT INTO st.{{.Table}} SELECT * FROM {{.Src}}.{{.Table}};
{{- if .Seg}}
CREATE OR REPLACE TABLE st.{{.Digest}} AS
SELECT {{join .Seg ", "}}, count(*) AS n, sum(hash(seg_row)) AS h FROM st.{{.Table}} AS seg_row GROUP BY {{join .Seg ", "}};
{{- end}}

-- The changed segments' rows (and digests) of the scope replace the state's
-- (In: a row t is in a changed segment, export/in_changed.sql).
DELETE FROM st.{{.Table}} AS t WHERE ({{.Pred}}) AND {{.In}};
INSERT INTO st.{{.Table}} SELECT * FROM memory.{{.Table}} AS t WHERE {{.In}};
DELETE FROM st.{{.Digest}} AS t WHERE ({{.Pred}}) AND {{.In}};
INSERT INTO st.{{.Digest}} SELECT * FROM scope_digests AS t WHERE {{.In}};

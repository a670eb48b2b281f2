-- The scope's rows replace the state's.
DELETE FROM st.{{.Table}} WHERE {{.Pred}};
INSERT INTO st.{{.Table}} SELECT * FROM {{.Src}}.{{.Table}};

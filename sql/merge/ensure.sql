-- The state's table, empty when the state has none yet (a new state).
CREATE TABLE IF NOT EXISTS st.{{.Table}} AS SELECT * FROM {{.Src}}.{{.Table}} WHERE false;

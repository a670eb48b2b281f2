-- The state's meta: one row of JSON (pipelines.stateMeta).
CREATE OR REPLACE TABLE st.state_meta AS SELECT {{quote .}}::VARCHAR AS body;

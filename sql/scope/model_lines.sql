-- The state's eo_model lines of the scope, for the scope's assemble (the
-- model does not run again: they are what it wrote).
CREATE OR REPLACE TABLE out_model_lines AS
SELECT * FROM st.out_model_lines
WHERE (match_id IN (SELECT id FROM memory.scope_ids) OR (match_id IS NULL AND tournament_id IN (SELECT id FROM memory.scope_tours)));

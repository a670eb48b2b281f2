-- The sample before it is chosen again (none on a new state).
CREATE TABLE IF NOT EXISTS st.out_sandbox_sample (tournament_id UUID, match_id UUID);
CREATE OR REPLACE TEMP TABLE sandbox_old AS SELECT * FROM st.out_sandbox_sample;

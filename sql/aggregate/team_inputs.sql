-- The team profiles' inputs in catalog agg: views of the state's rows of
-- the touched teams (every match of theirs, whole history).
CREATE OR REPLACE VIEW agg.out_matches AS SELECT * FROM st.out_matches
WHERE team_a_id IN (SELECT id FROM memory.touched_teams) OR team_b_id IN (SELECT id FROM memory.touched_teams);
CREATE OR REPLACE VIEW agg.out_map_results AS SELECT * FROM st.out_map_results WHERE match_id IN (SELECT id FROM agg.out_matches);
-- rounds and vetoes count per team: a touched team's own rows
CREATE OR REPLACE VIEW agg.out_rounds AS SELECT * FROM st.out_rounds WHERE team_id IN (SELECT id FROM memory.touched_teams);
CREATE OR REPLACE VIEW agg.out_vetoes AS SELECT * FROM st.out_vetoes WHERE team_id IN (SELECT id FROM memory.touched_teams);

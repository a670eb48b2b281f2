-- The player summaries' inputs in catalog agg: the touched players' stat
-- lines (whole history), joined by match to the whole tables.
CREATE OR REPLACE VIEW agg.out_player_stats AS SELECT * FROM st.out_player_stats
WHERE player_id IN (SELECT id FROM memory.touched_players);
CREATE OR REPLACE VIEW agg.out_matches AS SELECT * FROM st.out_matches;
CREATE OR REPLACE VIEW agg.out_map_results AS SELECT * FROM st.out_map_results;

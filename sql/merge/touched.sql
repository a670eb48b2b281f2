-- The teams and players whose aggregates are computed again: those of the
-- scope's matches, before (the state) and after (the scope). On a new state,
-- every one.
CREATE OR REPLACE TABLE touched_teams AS
SELECT team_a_id AS id FROM memory.out_matches UNION SELECT team_b_id FROM memory.out_matches;
CREATE OR REPLACE TABLE touched_players AS
SELECT player_id AS id FROM st.out_player_stats WHERE match_id IN (SELECT id FROM memory.scope_ids)
UNION SELECT player_id FROM memory.out_player_stats;

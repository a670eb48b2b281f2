-- The scope's completed matches, before and after, with their upstream keys:
-- what the model reads of a match's maps, stats and updates.
CREATE OR REPLACE TABLE scope_completed AS
SELECT m.id, i.ukey FROM id_map i JOIN (
  SELECT id FROM st.out_matches WHERE status = 'completed' AND id IN (SELECT id FROM memory.scope_ids)
  UNION SELECT id FROM memory.out_matches WHERE status = 'completed') m ON i.kind = 'match' AND i.id = m.id;

-- Rows of the team and player boards, appended from Go (model.TeamBoard, PlayerBoard).
CREATE OR REPLACE TEMP TABLE model_rank_rows (
  entity_type VARCHAR, rank INTEGER, entity_id VARCHAR, value DOUBLE, rating DOUBLE, rd DOUBLE,
  matches INTEGER, previous_rank INTEGER)

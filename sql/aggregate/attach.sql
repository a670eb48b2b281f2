-- Catalog agg: the aggregates of the touched teams and players, computed
-- on views of the state (aggregate/*_inputs.sql).
ATTACH IF NOT EXISTS ':memory:' AS agg;

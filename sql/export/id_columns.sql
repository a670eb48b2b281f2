-- A state table's UUID columns (and lists of them), published as text.
SELECT column_name, data_type = 'UUID[]' FROM duckdb_columns()
WHERE database_name = 'st' AND table_name = {{quote .}} AND data_type IN ('UUID', 'UUID[]') ORDER BY column_index;

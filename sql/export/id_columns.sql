-- A table's UUID columns (and lists of them), published as text.
SELECT column_name, data_type = 'UUID[]' FROM duckdb_columns()
WHERE database_name = {{quote .Catalog}} AND table_name = {{quote .Table}} AND data_type IN ('UUID', 'UUID[]')
ORDER BY column_index;

-- What DuckDB holds beside the blocks of database files it caches.
SELECT coalesce(sum(memory_usage_bytes) FILTER (WHERE tag <> 'BASE_TABLE'), 0) FROM duckdb_memory();

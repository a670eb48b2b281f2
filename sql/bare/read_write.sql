-- The yardstick of a full rebuild (pipelines.BareReadWrite): DuckDB reads
-- one entity's NDJSON files and writes them as one Parquet file, zstd as
-- the pipeline exports. Nothing is typed, checked, keyed or derived.
COPY (SELECT * FROM read_json([{{range $i, $f := .Files}}{{if $i}}, {{end}}{{quote $f}}{{end}}], format = 'newline_delimited', union_by_name = true))
TO {{quote .Out}} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880);

-- The change log and the digests saved to the store for the next run.
COPY (SELECT * FROM {{if .Log}}out_changes ORDER BY position{{else}}entity_digests ORDER BY entity_type, entity_id{{end}})
TO {{quote .Path}} (FORMAT parquet, COMPRESSION zstd);

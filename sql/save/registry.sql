-- A registry saved to the store (the authoritative copy: ids stay stable
-- when the work folder is lost).
COPY (SELECT * FROM {{.Table}} ORDER BY kind, ukey) TO {{quote .Path}} (FORMAT parquet);

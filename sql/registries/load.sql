INSERT INTO {{.Table}} SELECT * FROM read_parquet({{quote .Path}});

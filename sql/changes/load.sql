INSERT INTO {{.Table}} BY NAME SELECT * FROM read_parquet({{quote .Path}});

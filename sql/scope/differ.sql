-- How many rows the two queries do not share (pipelines.run.differ).
SELECT (SELECT count(*) FROM ({{.Old}} EXCEPT ALL {{.New}})) + (SELECT count(*) FROM ({{.New}} EXCEPT ALL {{.Old}}));

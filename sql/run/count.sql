SELECT count(*) FROM {{.}};

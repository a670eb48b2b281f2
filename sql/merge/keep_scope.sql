-- A table computed on partial histories (catalog agg) keeps its scope's rows only.
DELETE FROM {{.Src}}.{{.Table}} WHERE ({{.Pred}}) IS NOT TRUE;

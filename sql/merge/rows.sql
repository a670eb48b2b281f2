SELECT * FROM {{.DB}}.{{.Table}} WHERE {{.Pred}};

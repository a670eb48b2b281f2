-- The stage's tables (pipelines.run.stage): the quarantine (every rejected
-- line with its reason), the batches the run reads (their order number
-- batch_seq and landing time), and one table of raw lines per entity.
CREATE OR REPLACE TABLE quarantine (batch_seq INTEGER, entity VARCHAR, line_no INTEGER, reason VARCHAR, body VARCHAR);
CREATE OR REPLACE TABLE batches (batch_seq INTEGER, batch_id VARCHAR, landed_at TIMESTAMPTZ);
{{- range .}}
CREATE OR REPLACE TABLE stage_{{.}} (batch_seq INTEGER, line_no INTEGER, body VARCHAR);
{{- end}}

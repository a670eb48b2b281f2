-- The run's quarantined lines, with their batch, reason and body.
COPY (
  SELECT b.batch_id, q.entity, q.line_no, q.reason, q.body FROM quarantine q JOIN batches b USING (batch_seq)
  ORDER BY b.batch_id, q.entity, q.line_no) TO {{quote .}} (FORMAT json);

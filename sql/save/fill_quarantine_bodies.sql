-- Each quarantined line gets its body.
UPDATE quarantine SET body = b.body FROM q_bodies b
WHERE quarantine.body IS NULL AND b.batch_seq = quarantine.batch_seq AND b.entity = quarantine.entity AND b.line_no = quarantine.line_no;

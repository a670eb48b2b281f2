SELECT entity, reason, count(*) FROM quarantine GROUP BY ALL ORDER BY ALL;

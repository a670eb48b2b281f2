-- The captures of markets mi ? to ? in walk order: each market's, in time
-- order (pipelines/odds.go).
SELECT c.mi, ci.ci, oi.oi, epoch_us(c.captured_at), c.price
FROM odds_caps c
JOIN odds_contributor_keys ci USING (contributor)
JOIN odds_outcome_keys oi USING (outcome)
WHERE c.mi BETWEEN ? AND ?
ORDER BY c.mi, c.captured_at;

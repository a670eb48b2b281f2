-- The captures of markets mi ? to ? for the eo_market walk
-- (pipelines/odds.go): each market's, in time and then landing order (one
-- book's later capture of an instant wins); names as their odds_names index.
SELECT mi, oi, ci, bi, price, epoch_us(captured_at) FROM odds_caps
WHERE mi BETWEEN ? AND ?
ORDER BY mi, captured_at, batch_seq, line_no;

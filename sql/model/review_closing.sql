-- The closing eo_market match-winner line of every match that has one (set
-- by sql/assemble/01_odds_lines.sql once the match settled): team A's
-- probability, de-vigged over the two closing rows.
SELECT CAST(match_id AS VARCHAR),
       (1 / any_value(price) FILTER (WHERE outcome_key = 'home')) /
       ((1 / any_value(price) FILTER (WHERE outcome_key = 'home')) + (1 / any_value(price) FILTER (WHERE outcome_key = 'away')))
FROM out_odds_lines
WHERE source = 'eo_market' AND market = 'match_winner' AND is_closing AND match_id IS NOT NULL
GROUP BY match_id
HAVING count(*) FILTER (WHERE outcome_key = 'home') = 1 AND count(*) FILTER (WHERE outcome_key = 'away') = 1
ORDER BY 1

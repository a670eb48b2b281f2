-- What the model review reads of the scope: the closing eo_market
-- match-winner lines.
SELECT match_id, outcome_key, price FROM {{.DB}}.out_odds_lines
WHERE source = 'eo_market' AND market = 'match_winner' AND is_closing AND match_id IN (SELECT id FROM memory.scope_ids);

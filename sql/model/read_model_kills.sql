-- The team-level kills of each completed match whose latest update carries
-- them (raw match_updates kills_a/kills_b: an upstream's team totals over
-- the match, e.g. cs2-2024's team-level stats). eo_model 2.0's kill-share
-- rating prefers them to the sums of the map-level stat lines. The latest
-- update is out_match_events' (changed_at, then landing order); the kills
-- are not published.
SELECT CAST(mi.id AS VARCHAR), CAST(u.kills_a AS DOUBLE), CAST(u.kills_b AS DOUBLE)
FROM (SELECT * FROM v_match_updates
      QUALIFY row_number() OVER (PARTITION BY match_id ORDER BY changed_at DESC, batch_seq DESC, line_no DESC) = 1) u
JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = u.match_id
WHERE u.status = 'completed' AND u.kills_a IS NOT NULL AND u.kills_b IS NOT NULL AND u.kills_a + u.kills_b > 0
ORDER BY 1

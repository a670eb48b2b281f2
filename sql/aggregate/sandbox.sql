-- The sandbox sample: every completed match of two finished events, one top
-- tier (S or A) and one lower tier (B or C), about a hundred matches in all.
-- Each is the event of its tier group with the most completed matches not
-- above 60 (ties: the later event, then the id), so the choice is stable for
-- the same data.
CREATE OR REPLACE TEMP TABLE sample_candidates AS
SELECT t.id, CASE WHEN t.tier IN ('S', 'A') THEN 'top' ELSE 'lower' END AS grp, count(*) AS n, t.starts_at
FROM out_tournaments t JOIN out_matches m ON m.tournament_id = t.id AND m.status = 'completed'
WHERE NOT EXISTS (SELECT 1 FROM out_matches x WHERE x.tournament_id = t.id AND x.status IN ('scheduled', 'live'))
GROUP BY t.id, t.tier, t.starts_at
HAVING count(*) <= 60;

CREATE OR REPLACE TABLE out_sandbox_sample AS
SELECT m.tournament_id, m.id AS match_id
FROM out_matches m
WHERE m.status = 'completed' AND m.tournament_id IN (
  SELECT id FROM sample_candidates
  QUALIFY row_number() OVER (PARTITION BY grp ORDER BY n DESC, starts_at DESC NULLS LAST, id) = 1);

-- The chunks of parts_scope: each one's number, first match id and the next
-- chunk's first ('' for the last), as text (the exported files' ids).
SELECT chunk, lo, coalesce(lead(lo) OVER (ORDER BY chunk), '') FROM (
  SELECT chunk, CAST(min(id) AS VARCHAR) AS lo FROM parts_scope GROUP BY chunk)
ORDER BY chunk;

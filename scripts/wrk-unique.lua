-- wrk script: every request a distinct URI, so none is answered from the
-- edge's page cache and every one pays the page assembly. Used by
-- scripts/bench-edge.sh for its "miss" rows on /matches. Queries are strict
-- (an unknown parameter is a 400), so the URI varies by a parameter the
-- route takes without changing the rows: date_to, a distinct day after
-- 2100 (every match is scheduled before it).
local n = 0
math.randomseed(os.time() + math.floor(os.clock() * 1e6))
local base = 4102444800 + math.random(0, 1e6) * 86400 -- 2100-01-01 UTC, plus a random start
request = function()
  n = n + 1
  return wrk.format(nil, wrk.path .. "&date_to=" .. os.date("!%Y-%m-%d", base + n * 86400))
end

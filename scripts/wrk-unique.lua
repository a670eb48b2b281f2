-- wrk script: every request a distinct URI (an extra query parameter the
-- API ignores), so none is answered from the edge's page cache and every one
-- pays the page assembly. Used by scripts/bench-edge.sh for its "miss" rows.
local n = 0
math.randomseed(os.time() + math.floor(os.clock() * 1e6))
request = function()
  n = n + 1
  return wrk.format(nil, wrk.path .. "&nocache=" .. n .. "-" .. math.random(1, 1e9))
end

-- wrk script for scenario (e): many keep-alive connections that are mostly idle. Each connection
-- waits DELAY_MS (default 1000) between a response and its next request, so with -c 1000 the
-- contender holds 1000 open connections at ~1000 req/s instead of being driven flat out.
-- The token comes from the command line (-H "Authorization: Bearer ...").
local pause = tonumber(os.getenv("DELAY_MS") or "1000")
delay = function()
  return pause
end

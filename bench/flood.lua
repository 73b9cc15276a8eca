-- wrk script (scenario h): a different random opaque token on every request, none of them seen before:
-- a flood that would become a flood at the introspection endpoint if nothing bounded it. FLOOD_DELAY_MS
-- (default 0: as fast as answers come) spaces each connection's requests, for a flood of a given rate
-- (50 connections x 10 ms = about 5 000 requests/s) rather than one that takes whatever the server gives.
local counter = 0
local pause = tonumber(os.getenv("FLOOD_DELAY_MS") or "0") or 0
init = function(args)
  math.randomseed(os.time())
end
delay = function()
  return pause
end
request = function()
  counter = counter + 1
  local token = string.format("opaque-flood-%d-%d-%d", math.random(1, 1000000000), counter, math.random(1, 1000000000))
  return wrk.format("GET", "/", { ["Authorization"] = "Bearer " .. token })
end

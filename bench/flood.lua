-- wrk script (scenario h): a different random opaque token on every request, none of them seen before:
-- a flood that would become a flood at the introspection endpoint if nothing bounded it.
local counter = 0
init = function(args)
  math.randomseed(os.time())
end
request = function()
  counter = counter + 1
  local token = string.format("opaque-flood-%d-%d-%d", math.random(1, 1000000000), counter, math.random(1, 1000000000))
  return wrk.format("GET", "/", { ["Authorization"] = "Bearer " .. token })
end

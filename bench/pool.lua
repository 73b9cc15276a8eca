-- wrk script: a different token from the file named by TOKENS on every request.
local tokens = {}
local index = 0
init = function(args)
  for line in io.lines(os.getenv("TOKENS")) do
    if #line > 0 then tokens[#tokens + 1] = line end
  end
end
request = function()
  index = index % #tokens + 1
  return wrk.format("GET", "/", { ["Authorization"] = "Bearer " .. tokens[index] })
end

-- wrk script: a different token from the file named by TOKENS on every request, in file order,
-- starting after the first TOKEN_OFFSET tokens (default 0) and wrapping around at the end. run.sh
-- passes the warm-up's request count, so the measurement does not reuse the warm-up's tokens.
local tokens = {}
local index = 0
init = function(args)
  for line in io.lines(os.getenv("TOKENS")) do
    if #line > 0 then tokens[#tokens + 1] = line end
  end
  index = (tonumber(os.getenv("TOKEN_OFFSET") or "0") or 0) % #tokens
end
request = function()
  index = index % #tokens + 1
  return wrk.format("GET", "/", { ["Authorization"] = "Bearer " .. tokens[index] })
end

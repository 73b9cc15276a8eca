-- wrk script (scenario f): the DPoP-bound token of bench/mint.py with a new proof from the file named
-- by PROOFS on every request, in file order, starting after the first TOKEN_OFFSET (default 0). A
-- proof is good once: if the file runs out, wrk wraps around and the replays are refused (non-2xx).
local proofs = {}
local index = 0
local token
init = function(args)
  for line in io.lines(os.getenv("PROOFS")) do
    if #line > 0 then proofs[#proofs + 1] = line end
  end
  token = io.open(os.getenv("DPOP_TOKEN")):read("*l")
  index = (tonumber(os.getenv("TOKEN_OFFSET") or "0") or 0) % #proofs
end
request = function()
  index = index % #proofs + 1
  return wrk.format("GET", "/", { ["Authorization"] = "DPoP " .. token, ["DPoP"] = proofs[index] })
end

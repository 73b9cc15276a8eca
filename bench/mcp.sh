#!/usr/bin/env bash
# What an MCP message costs (issue 56): a 1 KiB JSON-RPC tools/call POSTed to an MCP [[resource]] (read whole, parsed,
# matched by mcp_tools, then forwarded byte for byte) against a plain POST of the same body to a route outside any
# resource (streamed as it comes), through the same Gatehouse process, the two alternating for ROUNDS rounds; wrk and
# the nginx upstream on CPU 0, Gatehouse alone on CPU 1; 50 connections, one RS256 token whose aud names both the
# resource and the provider's audience. Prints each round, the medians, the paired median ratio and the CPU model.
#
#   bench/mcp.sh                                   # .build-release/release/gatehouse
#   ROUNDS=7 DURATION=6 bench/mcp.sh /path/to/gatehouse
set -euo pipefail
cd "$(dirname "$0")/.."
GATEHOUSE=${1:-.build-release/release/gatehouse}
ROUNDS=${ROUNDS:-5}; DURATION=${DURATION:-6}
OUT=$(pwd)/bench/out/mcp
UP=18191; GH=18193; ADMIN=18194
[ -x "$GATEHOUSE" ] || { echo "build first: swift build -c release --product gatehouse --scratch-path .build-release -Xswiftc -enforce-exclusivity=unchecked" >&2; exit 1; }
command -v wrk >/dev/null || scripts/apt-install.sh wrk
mkdir -p "$OUT/www"
python3 - "$OUT" <<'PY'
import base64, json, sys, time
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
out = sys.argv[1]
b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
uint = lambda n: n.to_bytes((n.bit_length() + 7) // 8, "big")
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
numbers = key.public_key().public_numbers()
json.dump({"keys": [{"kty": "RSA", "kid": "mcp-1", "alg": "RS256", "n": b64(uint(numbers.n)), "e": b64(uint(numbers.e))}]},
          open(f"{out}/www/jwks.json", "w"))
now = int(time.time())
claims = {"iss": "https://issuer.bench", "sub": "agent-1", "aud": ["bench-api", "http://127.0.0.1/mcp"],
          "scope": "mcp:tools", "iat": now, "exp": now + 7200}
signing_input = b64(json.dumps({"alg": "RS256", "kid": "mcp-1", "typ": "JWT"}).encode()) + "." + b64(json.dumps(claims).encode())
signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
open(f"{out}/token", "w").write(signing_input + "." + b64(signature))
# A tools/call of exactly 1024 bytes, its arguments padded.
head = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"repo":"public/docs","query":"'
tail = '"}}}'
open(f"{out}/body.json", "w").write(head + "q" * (1024 - len(head) - len(tail)) + tail)
PY
cat > "$OUT/upstream.conf" <<CONF
worker_processes 1; daemon off; pid $OUT/upstream.pid; error_log $OUT/upstream-error.log;
events { worker_connections 4096; }
http { access_log off; client_body_buffer_size 16k;
  server { listen 127.0.0.1:$UP; keepalive_requests 1000000;
    location = /jwks.json { root $OUT/www; default_type application/json; }
    location / { return 200 "ok\n"; } } }
CONF
cat > "$OUT/gatehouse.toml" <<CONF
[listen]
address = "127.0.0.1:$GH"
[admin]
address = "127.0.0.1:$ADMIN"
[upstream]
url = "http://127.0.0.1:$UP"
[failure_log]
path = "$OUT/failures.log"
[[provider]]
name = "bench"
type = "jwks"
issuer = "https://issuer.bench"
jwks_uri = "http://127.0.0.1:$UP/jwks.json"
audiences = ["bench-api"]
[[resource]]
url = "http://127.0.0.1/mcp"
authorization_servers = ["https://issuer.bench"]
mcp = true
[[route]]
prefix = "/mcp"
mcp_tools = ["delete_*"]
scopes = ["repo:admin"]
[[route]]
prefix = "/mcp"
scopes = ["mcp:tools"]
[[route]]
prefix = "/plain"
scopes = ["mcp:tools"]
CONF
"$GATEHOUSE" check-config --config "$OUT/gatehouse.toml" >/dev/null
cat > "$OUT/post.lua" <<'LUA'
local file = io.open(os.getenv("BODY"))
wrk.body = file:read("*a")
file:close()
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
LUA
export BODY=$OUT/body.json TOKEN; TOKEN=$(cat "$OUT/token")
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
taskset -c 0 nginx -c "$OUT/upstream.conf" -p "$OUT" & PIDS+=($!)
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$UP/jwks.json" && break; sleep 0.1; done
source bench/ab.sh
MCP=(); PLAIN=()
for round in $(seq "$ROUNDS"); do
  taskset -c 1 "$GATEHOUSE" serve --config "$OUT/gatehouse.toml" 2>"$OUT/gatehouse.err" & pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$ADMIN/readyz" >/dev/null && break; sleep 0.1; done
  order=(mcp plain); (( round % 2 == 0 )) && order=(plain mcp)
  for path in "${order[@]}"; do
    measure "round $round $path" "http://127.0.0.1:$GH/$path" -s "$OUT/post.lua" || { kill "$pid"; exit 1; }
    if [[ $path == mcp ]]; then MCP+=("$rps"); else PLAIN+=("$rps"); fi
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
# plain POST 1 KiB as the reference, tools/call 1 KiB to the MCP resource measured against it
summarize "${PLAIN[*]}" "${MCP[*]}" plain tools/call 0.9

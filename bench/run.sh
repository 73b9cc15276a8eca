#!/usr/bin/env bash
# Gatehouse benchmark: runs the upstream, the reference proxies and Gatehouse side by side on this
# machine and prints requests/s, p50, p99 and each contender's ratio to a plain nginx proxy.
#
#   bench/run.sh                 # every scenario, 10 s each
#   DURATION=5s bench/run.sh     # shorter
#
# CPU layout (2 cores): wrk and the upstream nginx on CPU 0, the contender alone on CPU 1.
# Scenarios: a = one valid RS256 token repeated; b = a different valid token per request
# (verified-token cache misses: real signature checks); c = invalid tokens (401 path, failure log on).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${OUT:-$ROOT/bench/out}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
UPSTREAM_PORT=18081; NGINX_PORT=18082; GATEHOUSE_PORT=18083; ADMIN_PORT=18084
ISSUER="https://issuer.bench"; AUDIENCE="bench-api"

need() { command -v "$1" >/dev/null 2>&1; }
if ! need nginx || ! need wrk; then
  echo "installing nginx and wrk from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx wrk >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

echo "building gatehouse (release)" >&2
swift build -c release --product gatehouse --scratch-path .build-release >/dev/null
GATEHOUSE=$ROOT/.build-release/release/gatehouse

rm -rf "$OUT"; mkdir -p "$OUT/www"
python3 bench/mint.py "$OUT" "$ISSUER" "$AUDIENCE" 20000
cp "$OUT/jwks.json" "$OUT/www/jwks.json"

cat > "$OUT/upstream.conf" <<CONF
worker_processes 1; daemon off; pid $OUT/upstream.pid; error_log $OUT/upstream-error.log;
events { worker_connections 4096; }
http { access_log off;
  server { listen 127.0.0.1:$UPSTREAM_PORT; keepalive_requests 1000000;
    location = /jwks.json { root $OUT/www; default_type application/json; }
    location / { return 200 "ok\n"; } } }
CONF
cat > "$OUT/proxy.conf" <<CONF
worker_processes 1; daemon off; pid $OUT/proxy.pid; error_log $OUT/proxy-error.log;
events { worker_connections 4096; }
http { access_log off;
  upstream backend { server 127.0.0.1:$UPSTREAM_PORT; keepalive 64; }
  server { listen 127.0.0.1:$NGINX_PORT; keepalive_requests 1000000;
    location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection ""; } } }
CONF
cat > "$OUT/gatehouse.toml" <<CONF
[listen]
address = "127.0.0.1:$GATEHOUSE_PORT"
[admin]
address = "127.0.0.1:$ADMIN_PORT"
[upstream]
url = "http://127.0.0.1:$UPSTREAM_PORT"
[failure_log]
path = "$OUT/failures.log"
[[provider]]
name = "bench"
type = "jwks"
issuer = "$ISSUER"
jwks_uri = "http://127.0.0.1:$UPSTREAM_PORT/jwks.json"
audiences = ["$AUDIENCE"]
CONF

PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

taskset -c 0 "$NGINX" -c "$OUT/upstream.conf" -p "$OUT" & PIDS+=($!)
sleep 0.5

# run NAME PORT SCENARIO -> prints one result line "NAME SCENARIO rps p50 p99"
run_wrk() {
  local name=$1 port=$2 scenario=$3 args=()
  case $scenario in
    a) args=(-H "Authorization: Bearer $(cat "$OUT/token")") ;;
    b) args=(-s bench/pool.lua); export TOKENS=$OUT/tokens ;;
    c) args=(-s bench/pool.lua); export TOKENS=$OUT/bad-tokens ;;
  esac
  taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d2s "${args[@]}" "http://127.0.0.1:$port/" >/dev/null 2>&1 || true
  local text
  text=$(taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency "${args[@]}" "http://127.0.0.1:$port/")
  echo "$text" > "$OUT/wrk-$name-$scenario.txt"
  local rps p50 p99 non2xx
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$text")
  p50=$(awk '$1=="50%" {print $2}' <<<"$text")
  p99=$(awk '$1=="99%" {print $2}' <<<"$text")
  non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$text")
  printf "%-10s %-3s %10s %10s %10s %s\n" "$name" "$scenario" "$rps" "$p50" "$p99" "${non2xx:+non-2xx=$non2xx}"
}

RESULTS=$OUT/results.txt; : > "$RESULTS"
printf "%-10s %-3s %10s %10s %10s\n" contender sc req/s p50 p99
run_wrk direct $UPSTREAM_PORT a | tee -a "$RESULTS"

taskset -c 1 "$NGINX" -c "$OUT/proxy.conf" -p "$OUT" & PIDS+=($!)
sleep 0.5
run_wrk nginx $NGINX_PORT a | tee -a "$RESULTS"
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true

taskset -c 1 "$GATEHOUSE" serve --config "$OUT/gatehouse.toml" 2>"$OUT/gatehouse.log" & PIDS+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null && break; sleep 0.1; done
echo "gatehouse RSS idle: $(ps -o rss= -p "${PIDS[-1]}") KiB" | tee -a "$RESULTS"
for scenario in a b c; do run_wrk gatehouse $GATEHOUSE_PORT $scenario | tee -a "$RESULTS"; done
echo "gatehouse RSS after load: $(ps -o rss= -p "${PIDS[-1]}") KiB" | tee -a "$RESULTS"

nginx_rps=$(awk '$1=="nginx" && $2=="a" {print $3}' "$RESULTS")
echo
echo "ratios to the nginx proxy (scenario a, $nginx_rps req/s):"
awk -v base="$nginx_rps" '$1=="gatehouse" && $2 ~ /^[abc]$/ {printf "  gatehouse %s: %.2fx\n", $2, $3/base}' "$RESULTS"

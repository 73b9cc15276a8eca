#!/usr/bin/env bash
# A/B of two Gatehouse builds, the builds alternating for ROUNDS rounds, each a fresh process alone on CPU 1 (h2load
# and the nginx upstream on CPU 0), medians printed. A few percent is below this VM's run-to-run noise; alternating
# rounds of the two builds are what measures it. MODES (default "get grpc"), one valid RS256 token throughout:
#   get    HTTP/2 GET, 4 connections x 32 streams, HTTP/2 upstream
#   grpc   the gRPC unary call, the same
#   h1     HTTP/1.1 in and out (scenario a's shape), 128 connections
#   check  ext_authz: Envoy's gRPC Check (bench/check_request.py) on the [ext_authz] port, 4 x 32 streams
#
#   SETUP_ONLY=1 SKIP_BUILD=1 bench/http2.sh     # once: writes bench/out-http2 (configurations, token)
#   bench/h2ab.sh BUILD_A BUILD_B
#   MODES="h1 get grpc check" ROUNDS=5 DURATION=6 bench/h2ab.sh /tmp/before .build-release/release/gatehouse
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out-http2}
ROUNDS=${ROUNDS:-3}; DURATION=${DURATION:-6}
read -r -a MODES <<<"${MODES:-get grpc}"
[[ $# == 2 && -x $1 && -x $2 ]] || { echo "usage: bench/h2ab.sh BUILD_A BUILD_B (two gatehouse binaries)" >&2; exit 2; }
[[ -f $OUT/gatehouse-h2.toml && -f $OUT/upstream.conf ]] || { echo "run bench/http2.sh first (it writes $OUT)" >&2; exit 1; }
python3 bench/mint.py "$OUT" "https://issuer.bench" "bench-api" 1 >/dev/null   # tokens last 2 h
cp "$OUT/jwks.json" "$OUT/www/jwks.json"
TOKEN=$(cat "$OUT/token")
python3 bench/check_request.py "$TOKEN" >"$OUT/check-request.bin"   # the Check carries the token just minted
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
taskset -c 0 nginx -c "$PWD/$OUT/upstream.conf" -p "$PWD/$OUT" 2>/dev/null & PIDS+=($!)
sleep 0.3

rate() {  # rate BINARY MODE: req/s of one measurement (empty when an answer was 3xx, 4xx or 5xx)
  local binary=$1 mode=$2 pid path=/ port=18094 config=gatehouse-h2 args=(-c 4 -m 32 -H "authorization: Bearer $TOKEN")
  case $mode in
    grpc) path=/bench.Echo/Unary; args+=(-d "$OUT/grpc-unary.bin" -H "content-type: application/grpc" -H "te: trailers") ;;
    h1) config=gatehouse-h1; args=(--h1 -c 128 -m 1 -H "authorization: Bearer $TOKEN") ;;
    check) config=gatehouse-check; port=18097; path=/envoy.service.auth.v3.Authorization/Check
      args=(-c 4 -m 32 -d "$OUT/check-request.bin" -H "content-type: application/grpc" -H "te: trailers") ;;
  esac
  taskset -c 1 "$binary" serve --config "$OUT/$config.toml" 2>/dev/null & pid=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:18095/readyz >/dev/null && break; sleep 0.1; done
  taskset -c 0 h2load "${args[@]}" -D 2 "http://127.0.0.1:$port$path" >/dev/null 2>&1 || true
  taskset -c 0 h2load "${args[@]}" -D "$DURATION" "http://127.0.0.1:$port$path" 2>&1 \
    | awk '/^finished in/ { gsub(",", "", $4); rps = $4 } /^status codes:/ { ok = $3; other = $5 + $7 + $9 } END { if (ok > 0 && other == 0) print rps }'
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

declare -A results
for round in $(seq "$ROUNDS"); do
  for mode in "${MODES[@]}"; do
    order=(A B); (( round % 2 == 0 )) && order=(B A)   # neither build always runs first
    for side in "${order[@]}"; do
      binary=$1; [[ $side == B ]] && binary=$2
      results[$side-$mode-$round]=$(rate "$binary" "$mode")
    done
    printf 'round %s %-5s A %10s  B %10s\n' "$round" "$mode" "${results[A-$mode-$round]}" "${results[B-$mode-$round]}"
  done
done
echo "CPU: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
for mode in "${MODES[@]}"; do
  a=(); b=()
  for round in $(seq "$ROUNDS"); do a+=("${results[A-$mode-$round]}"); b+=("${results[B-$mode-$round]}"); done
  python3 -c '
import sys, statistics
mode, n = sys.argv[1], int(sys.argv[2]); a = list(map(float, sys.argv[3:3 + n])); b = list(map(float, sys.argv[3 + n:]))
ratios = [y / x for x, y in zip(a, b)]
print(f"{mode:5s} median A {statistics.median(a):.0f}  B {statistics.median(b):.0f}  B/A {statistics.median(b) / statistics.median(a):.3f}"
      f"  paired median {statistics.median(ratios):.3f}  per round " + ", ".join(f"{r:.2f}" for r in ratios))
' "$mode" "$ROUNDS" "${a[@]}" "${b[@]}"
done

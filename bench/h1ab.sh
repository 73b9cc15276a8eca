#!/usr/bin/env bash
# A/B of two Gatehouse builds on HTTP/1.1, the builds alternating for ROUNDS rounds, each a fresh process alone on
# CPU 1 (wrk and the nginx upstream on CPU 0), 50 connections, 2 s warm-up then DURATION s; medians and the paired
# median printed. SCENARIO a: one valid token; b: a new token per request (bench/pool.lua, 40 000 tokens: the
# verified-token cache misses). Uses bench/profile.sh's configuration and bench/run.sh's tokens: run both once first.
#
#   SCENARIO=b ROUNDS=5 DURATION=6 bench/h1ab.sh /tmp/before .build-release/release/gatehouse
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(pwd)/bench/out/profile
SCENARIO=${SCENARIO:-b}; ROUNDS=${ROUNDS:-5}; DURATION=${DURATION:-6}
[ -f "$OUT/gatehouse.toml" ] && [ -f bench/out/tokens ] || { echo "run bench/run.sh and bench/profile.sh once first" >&2; exit 1; }
taskset -c 0 nginx -c "$OUT/upstream.conf" -p "$OUT" & NGINX=$!
trap 'kill $NGINX 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:18181/" && break; sleep 0.1; done
case $SCENARIO in
  a) ARGS=(-H "Authorization: Bearer $(cat bench/out/token)") ;;
  b) ARGS=(-s bench/pool.lua); export TOKENS=bench/out/tokens TOKEN_OFFSET=0 ;;
  *) echo "SCENARIO is a or b" >&2; exit 2 ;;
esac
source bench/ab.sh
A=(); B=()
for round in $(seq "$ROUNDS"); do
  order=(A B); (( round % 2 == 0 )) && order=(B A)   # neither build always runs first
  for side in "${order[@]}"; do
    binary=$1; [[ $side == B ]] && binary=$2
    taskset -c 1 "$binary" serve --config "$OUT/gatehouse.toml" 2>/dev/null & pid=$!
    for _ in $(seq 100); do curl -sf http://127.0.0.1:18184/readyz >/dev/null && break; sleep 0.1; done
    measure "round $round $side" http://127.0.0.1:18183/x "${ARGS[@]}" || { kill "$pid"; exit 1; }
    kill "$pid"; wait "$pid" 2>/dev/null || true
    if [[ $side == A ]]; then A+=("$rps"); else B+=("$rps"); fi
  done
done
summarize "${A[*]}" "${B[*]}"

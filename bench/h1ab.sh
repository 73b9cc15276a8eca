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
A=(); B=()
for round in $(seq "$ROUNDS"); do
  for side in A B; do
    binary=$1; [[ $side == B ]] && binary=$2
    taskset -c 1 "$binary" serve --config "$OUT/gatehouse.toml" 2>/dev/null & pid=$!
    for _ in $(seq 100); do curl -sf http://127.0.0.1:18184/readyz >/dev/null && break; sleep 0.1; done
    taskset -c 0 wrk -t1 -c50 -d2s "${ARGS[@]}" http://127.0.0.1:18183/x >/dev/null
    text=$(taskset -c 0 wrk -t1 -c50 -d"${DURATION}s" --latency "${ARGS[@]}" http://127.0.0.1:18183/x)
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rps=$(awk '/^Requests\/sec/ { print $2 }' <<<"$text")
    bad=$(awk '/Non-2xx/ { print $NF }' <<<"$text")
    [[ -z $bad ]] || { echo "round $round $side: $bad non-2xx answers" >&2; exit 1; }
    echo "round $round $side $rps req/s  p99 $(awk '$1 == "99%" { print $2 }' <<<"$text")"
    if [[ $side == A ]]; then A+=("$rps"); else B+=("$rps"); fi
  done
done
echo "CPU: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
python3 -c '
import statistics, sys
a, b = [float(x) for x in sys.argv[1].split()], [float(x) for x in sys.argv[2].split()]
print(f"A median {statistics.median(a):.0f}  B median {statistics.median(b):.0f}  B/A {statistics.median(b) / statistics.median(a):.3f}"
      f"  paired median {statistics.median([y / x for x, y in zip(a, b)]):.3f}")' "${A[*]}" "${B[*]}"

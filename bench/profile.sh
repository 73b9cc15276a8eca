#!/usr/bin/env bash
# Profiles Gatehouse under scenario (a) (one valid RS256 token repeated) with perf: an nginx upstream
# and wrk on CPU 0, the release build alone on CPU 1. Prints the hottest symbols.
#
#   bench/profile.sh              # after bench/run.sh has built .build-release and minted tokens
#   DURATION=8 bench/profile.sh
#   MODE=utilization | syscalls | mallocs | counts (mallocs, retains, releases) | faults (per request) | malloc-callers | retain-callers    SCENARIO=a | b | c | public | dpop
#   GATEHOUSE=/path/to/gatehouse bench/profile.sh    # another build, for A/B runs back to back
#   ASSERTION=1 bench/profile.sh                    # with [assertion] on
#   TRACING=1 bench/profile.sh                      # with [tracing] on, this sampling ratio
#   TRACING_PORT=9 TRACING=1 bench/profile.sh       # ... exporting to a closed port (every export refused: no traffic)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$ROOT/bench/out/profile
DURATION=${DURATION:-6}
SCENARIO=${SCENARIO:-a}
GATEHOUSE=${GATEHOUSE:-$ROOT/.build-release/release/gatehouse}
TOKEN_DIR=$ROOT/bench/out
[ -x "$GATEHOUSE" ] || { echo "build first: bench/run.sh (or swift build -c release --scratch-path .build-release -Xswiftc -enforce-exclusivity=unchecked)" >&2; exit 1; }
[ -f "$TOKEN_DIR/token" ] || { echo "mint tokens first: bench/run.sh" >&2; exit 1; }
command -v perf >/dev/null || { apt-get update -qq && apt-get install -y -qq linux-perf >/dev/null; }
mkdir -p "$OUT/www"; cp "$TOKEN_DIR/jwks.json" "$OUT/www/jwks.json"
UP=18181; GH=18183; ADMIN=18184
cat > "$OUT/upstream.conf" <<CONF
worker_processes 1; daemon off; pid $OUT/upstream.pid; error_log $OUT/upstream-error.log;
events { worker_connections 4096; }
http { access_log off;
  server { listen 127.0.0.1:$UP; keepalive_requests 1000000;
    location = /jwks.json { root $OUT/www; default_type application/json; }
    location = /v1/traces { client_max_body_size 16m; return 200 ""; }
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
CONF
if [[ -n ${ASSERTION:-} ]]; then  # ASSERTION=1: [assertion] on (an ES256 identity assertion for the upstream)
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$OUT/assertion.pem" 2>/dev/null
  printf '[assertion]\nissuer = "https://gatehouse.bench"\nsigning_key_file = "%s"\nclaims = ["email"]\n' "$OUT/assertion.pem" >>"$OUT/gatehouse.toml"
fi
if [[ -n ${TRACING:-} ]]; then  # TRACING=RATIO: [tracing] on, exporting to the nginx upstream
  printf '[tracing]\nendpoint = "http://127.0.0.1:%s/v1/traces"\nsampling_ratio = %s\nmax_queue_size = 65536\nmax_batch_size = %s\n' "${TRACING_PORT:-$UP}" "$TRACING" "${TRACING_BATCH:-512}" >>"$OUT/gatehouse.toml"
fi
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
taskset -c 0 nginx -c "$OUT/upstream.conf" -p "$OUT" & PIDS+=($!)
sleep 0.3
taskset -c 1 "$GATEHOUSE" serve --config "$OUT/gatehouse.toml" 2>"$OUT/gatehouse.err" & GPID=$!; PIDS+=($GPID)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$ADMIN/readyz" >/dev/null && break; sleep 0.1; done
case $SCENARIO in
  a) ARGS=(-H "Authorization: Bearer $(cat "$TOKEN_DIR/token")") ;;
  b) ARGS=(-s bench/pool.lua); export TOKENS=$TOKEN_DIR/tokens ;;
  c) ARGS=(-s bench/pool.lua); export TOKENS=$TOKEN_DIR/bad-tokens ;;  # as bench/run.sh: wrong signatures
  public) ARGS=() ;;
  dpop)  # bench/run.sh's scenario f: a fresh proof per request, signed now for this port
    python3 bench/dpop.py "$TOKEN_DIR" "http://127.0.0.1:$GH/" "${DPOP_PROOFS:-200000}"
    ARGS=(-s bench/dpop.lua); export PROOFS=$TOKEN_DIR/dpop-proofs DPOP_TOKEN=$TOKEN_DIR/dpop-token ;;
esac
taskset -c 0 wrk -t1 -c50 -d2s "${ARGS[@]}" "http://127.0.0.1:$GH/x" >/dev/null
taskset -c 0 wrk -t1 -c50 -d"$((DURATION + 2))s" "${ARGS[@]}" "http://127.0.0.1:$GH/x" > "$OUT/wrk.txt" &
WRK=$!
# Every answer must be the scenario's (a 200, or for c a 401): a token that expired since bench/mint.py made it would
# otherwise be measured as 401s without a word (bench/mint.py's tokens last two hours).
check_answers() {
  wait $WRK
  if [[ $SCENARIO != c ]] && grep -q "Non-2xx" "$OUT/wrk.txt"; then
    echo "answers that are not 2xx ($(grep Non-2xx "$OUT/wrk.txt")): mint fresh tokens (bench/mint.py) or see $OUT/failures.log" >&2
    exit 1
  fi
}
sleep 1
if [[ ${MODE:-profile} == utilization ]]; then
  # How busy the contender's core is: task-clock over wall time (1.0 = saturated).
  perf stat -e task-clock -p "$GPID" -o "$OUT/utilization.txt" -- sleep "$DURATION" 2>/dev/null
  check_answers
  grep -E "Requests/sec" "$OUT/wrk.txt"
  grep -E "CPUs utilized|task-clock" "$OUT/utilization.txt"
  exit 0
fi
if [[ ${MODE:-profile} == syscalls || ${MODE:-profile} == mallocs || ${MODE:-profile} == faults || ${MODE:-profile} == counts ]]; then
  # Syscalls (or malloc calls) per request: counts over DURATION seconds, divided by the requests
  # served meanwhile. Unlike times, these counts barely move between runs on this noisy VM.
  EVENTS='syscalls:sys_enter_*'
  [[ $MODE == faults ]] && EVENTS='page-faults,context-switches'   # memory churn and thread hops per request
  if [[ $MODE == mallocs ]]; then
    LIBC=$(ldconfig -p | awk '/libc.so.6 .*x86-64/ {print $NF; exit}')
    perf probe -l 2>/dev/null | grep -q 'probe_libc:malloc ' || perf probe -q -x "$LIBC" malloc
    EVENTS=probe_libc:malloc
  fi
  if [[ $MODE == counts ]]; then  # exact, whatever the VM's noise: mallocs and Swift reference counting per request
    LIBC=$(ldconfig -p | awk '/libc.so.6 .*x86-64/ {print $NF; exit}')
    SWIFTCORE=$(ldd "$GATEHOUSE" | awk '/libswiftCore.so/ {print $3}')
    perf probe -l 2>/dev/null | grep -q 'probe_libc:malloc ' || perf probe -q -x "$LIBC" malloc
    for symbol in swift_retain swift_release; do
      perf probe -l 2>/dev/null | grep -q "probe_libswiftCore:$symbol " || perf probe -q -x "$SWIFTCORE" "$symbol"
    done
    EVENTS=probe_libc:malloc,probe_libswiftCore:swift_retain,probe_libswiftCore:swift_release
  fi
  before=$(curl -s "http://127.0.0.1:$ADMIN/metrics" | awk '/^gatehouse_requests_total/ {s += $2} END {print s}')
  perf stat -e "$EVENTS" -p "$GPID" -o "$OUT/syscalls.txt" -- sleep "$DURATION" 2>/dev/null
  after=$(curl -s "http://127.0.0.1:$ADMIN/metrics" | awk '/^gatehouse_requests_total/ {s += $2} END {print s}')
  check_answers
  requests=$((${after%.*} - ${before%.*}))
  echo "requests in the window: $requests"
  awk -v n="$requests" '$1 ~ /^[0-9,]+$/ { gsub(",", "", $1); if ($1 > 0) printf "%8.2f per request  %s\n", $1 / n, $2 }' "$OUT/syscalls.txt" | sort -rn | head -15
  exit 0
fi
if [[ ${MODE:-profile} == malloc-callers || ${MODE:-profile} == retain-callers ]]; then
  # Where the mallocs (or swift_retains) of MODE=counts come from:
  #   perf report -i bench/out/profile/perf.data --no-children --sort caller --stdio -g none
  if [[ $MODE == malloc-callers ]]; then
    LIBC=$(ldconfig -p | awk '/libc.so.6 .*x86-64/ {print $NF; exit}')
    perf probe -l 2>/dev/null | grep -q 'probe_libc:malloc ' || perf probe -q -x "$LIBC" malloc
    EVENT=probe_libc:malloc
  else
    SWIFTCORE=$(ldd "$GATEHOUSE" | awk '/libswiftCore.so/ {print $3}')
    perf probe -l 2>/dev/null | grep -q 'probe_libswiftCore:swift_retain ' || perf probe -q -x "$SWIFTCORE" swift_retain
    EVENT=probe_libswiftCore:swift_retain
  fi
  # CALLGRAPH=dwarf where frame pointers are missing (a caller shown as [unknown]).
  perf record -e "$EVENT" --call-graph "${CALLGRAPH:-fp}" -p "$GPID" -o "$OUT/perf.data" -- sleep "$DURATION" 2>/dev/null
  check_answers
  exit 0
fi
perf record -F 2999 --call-graph "${CALLGRAPH:-fp}" -p "$GPID" -o "$OUT/perf.data" -- sleep "$DURATION" 2>/dev/null
check_answers
grep -E "Requests/sec" "$OUT/wrk.txt"
perf report -i "$OUT/perf.data" --no-children --sort symbol --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -${TOP:-45}

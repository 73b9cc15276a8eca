#!/usr/bin/env bash
# Issue 44's figures: what a large route table and a `when` rule cost a request. Gatehouse alone on CPU 1, the
# upstream nginx and wrk on CPU 0, one RS256 token repeated (scenario a's shape), 50 keep-alive connections,
# HTTP/1.1. Configurations, measured in alternating rounds (each round runs every configuration once, in order):
#
#   r1-miss     one route; the request matches none (the default rule: a token required)
#   r5000-miss  5 000 routes: 2 000 by host (svc-N.example.com, and *.svc-N.example.com), 1 500 by path only,
#               500 by Envoy context (never on a door), 1 000 with a `when` rule; the request matches none,
#               with a Host (api.example.com) that a wildcard's suffix walk looks up
#   r1-hit      one route, with a `when` rule (true for the token), which the request matches
#   r5000-hit   the same route as the 5 000th, the other 4 999 as in r5000-miss
#   a           no route (scenario a)
#   a-when      one route for every path with a rule of three comparisons and one `exists` over the token's
#               ten-element `teams` list
#
#   bench/routes.sh                      # 3 rounds of 6 s
#   ROUNDS=5 DURATION=8s bench/routes.sh
#   SKIP_BUILD=1 bench/routes.sh         # use the existing .build-release/release/gatehouse
#   CONFIGS="a a-when" ROUNDS=9 bench/routes.sh   # a subset, more rounds
#
# Prints each configuration's median req/s and p99 over the rounds, and the ratios the issue names:
# r5000/r1 (miss and hit) at least 0.9, a-when/a at least 0.97. Exit 1 when a run answered other than 200.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${OUT:-$ROOT/bench/out-routes}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-6s}
WARMUP=${WARMUP:-2s}
CONNECTIONS=${CONNECTIONS:-50}
UPSTREAM_PORT=18091; GATEHOUSE_PORT=18093; ADMIN_PORT=18094
ISSUER="https://issuer.bench"; AUDIENCE="bench-api"
GATEHOUSE=${GATEHOUSE:-$ROOT/.build-release/release/gatehouse}
read -r -a CONFIGS <<<"${CONFIGS:-r1-miss r5000-miss r1-hit r5000-hit a a-when}"
RULE="claims.tenant == 'acme' && claims.level >= 2 && request.method == 'GET' && claims.teams.exists(t, t == 'team-9')"
PIDS=()
PROBLEMS=0

cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
die() { printf '*** %s\n' "$*" >&2; exit 1; }

command -v wrk >/dev/null && command -v nginx >/dev/null || scripts/apt-install.sh wrk nginx-light
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  echo "building gatehouse (release)" >&2
  swift build -c release --product gatehouse --scratch-path .build-release -Xswiftc -enforce-exclusivity=unchecked >/dev/null
fi
[[ -x $GATEHOUSE ]] || die "no release binary at $GATEHOUSE"

rm -rf "$OUT"; mkdir -p "$OUT/www"
python3 bench/mint.py "$OUT" "$ISSUER" "$AUDIENCE" 1
cp "$OUT/jwks.json" "$OUT/www/jwks.json"
TOKEN=$(cat "$OUT/rules-token")

cat >"$OUT/upstream.conf" <<CONF
worker_processes 1; daemon off; pid $OUT/upstream.pid; error_log $OUT/upstream-error.log;
events { worker_connections 4096; }
http { access_log off;
  server { listen 127.0.0.1:$UPSTREAM_PORT; keepalive_requests 1000000;
    location = /jwks.json { root $OUT/www; default_type application/json; }
    location / { return 200 "ok\n"; } } }
CONF
taskset -c 0 nginx -c "$OUT/upstream.conf" -p "$OUT" >"$OUT/upstream.out" 2>&1 &
PIDS+=($!)

# write_config NAME: the common sections, then NAME's routes.
write_config() {
  local name=$1 file=$OUT/$1.toml
  cat >"$file" <<TOML
[listen]
address = "127.0.0.1:$GATEHOUSE_PORT"
[admin]
address = "127.0.0.1:$ADMIN_PORT"
[upstream]
url = "http://127.0.0.1:$UPSTREAM_PORT"
[failure_log]
path = "$OUT/failures-$name.log"
[[provider]]
name = "bench"
type = "jwks"
issuer = "$ISSUER"
jwks_uri = "http://127.0.0.1:$UPSTREAM_PORT/jwks.json"
audiences = ["$AUDIENCE"]
TOML
  case $name in
    r1-miss) printf '[[route]]\nprefix = "/health"\nauth = "public"\n' >>"$file" ;;
    r1-hit) printf '[[route]]\nprefix = "/w4999"\nwhen = "%s"\n' "$RULE" >>"$file" ;;
    r5000-miss | r5000-hit)
      python3 - "$name" "$RULE" >>"$file" <<'PY'
import sys
name, rule = sys.argv[1], sys.argv[2]
out = []
for i in range(5000):
    if i < 1000:
        out.append(f'[[route]]\nprefix = "/v1/svc-{i}"\nhosts = ["svc-{i}.example.com"]\nauth = "public"\n')
    elif i < 2000:
        out.append(f'[[route]]\nprefix = "/v1/orders"\nhosts = ["*.svc-{i}.example.com"]\nauth = "optional"\n')
    elif i < 3500:
        out.append(f'[[route]]\nprefix = "/p{i}"\nmethods = ["GET"]\nscopes = ["s{i}"]\n')
    elif i < 4000:
        out.append(f'[[route]]\nprefix = "/v1"\ncontext = {{ service = "svc-{i}" }}\nauth = "public"\n')
    elif i < 4999 or name == "r5000-miss":
        out.append(f'[[route]]\nprefix = "/w{i}"\nwhen = "claims.tenant == \'t{i}\'"\n')
    else:
        out.append(f'[[route]]\nprefix = "/w4999"\nwhen = "{rule}"\n')
print("\n".join(out))
PY
      ;;
    a) ;;
    a-when) printf '[[route]]\nprefix = "/"\nwhen = "%s"\n' "$RULE" >>"$file" ;;
  esac
  "$GATEHOUSE" check-config --syntax-only --config "$file" >/dev/null || die "$name: the configuration does not load"
}

path_of() { case $1 in *-hit) echo /w4999/x ;; *) echo /v1/orders ;; esac; }

# measure NAME ROUND: starts Gatehouse with NAME's configuration, warms up, runs wrk, records req/s and p99.
measure() {
  local name=$1 round=$2 text rps p99 non2xx
  taskset -c 1 "$GATEHOUSE" serve --config "$OUT/$name.toml" >"$OUT/gatehouse-$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 100); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ADMIN_PORT/readyz" || true) == 200 ]] && break
    sleep 0.1
  done
  local url="http://127.0.0.1:$GATEHOUSE_PORT$(path_of "$name")"
  local args=(-H "Authorization: Bearer $TOKEN" -H "Host: api.example.com")
  local status
  status=$(curl -s -o /dev/null -w '%{http_code}' "${args[@]}" "$url" || true)
  [[ $status == 200 ]] || { PROBLEMS=$((PROBLEMS + 1)); echo "*** $name: $status, not 200 (log: $OUT/gatehouse-$name.log)" >&2; }
  taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" "${args[@]}" "$url" >/dev/null
  text=$(taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency "${args[@]}" "$url")
  echo "$text" >"$OUT/wrk-$name-$round.txt"
  rps=$(awk '/^Requests\/sec/ { print $2 }' <<<"$text")
  p99=$(awk '$1 == "99%" { v = $2; if (v ~ /us$/) v = v / 1000; else if (v ~ /ms$/) v = v + 0; else if (v ~ /s$/) v = v * 1000; print v }' <<<"$text")
  non2xx=$(awk '/Non-2xx or 3xx responses/ { print $NF }' <<<"$text")
  if [[ -n $non2xx ]]; then PROBLEMS=$((PROBLEMS + 1)); echo "*** $name round $round: $non2xx non-2xx answers" >&2; fi
  printf '%s\t%s\t%s\t%s\n' "$name" "$round" "$rps" "$p99" >>"$OUT/results.tsv"
  printf '  round %s  %-11s %10s req/s  p99 %6s ms\n' "$round" "$name" "$rps" "$p99"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

for name in "${CONFIGS[@]}"; do write_config "$name"; done
for _ in $(seq 100); do [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$UPSTREAM_PORT/jwks.json" || true) == 200 ]] && break; sleep 0.1; done
: >"$OUT/results.tsv"
echo "CPU: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs; $ROUNDS rounds of $DURATION"
for round in $(seq "$ROUNDS"); do
  for name in "${CONFIGS[@]}"; do measure "$name" "$round"; done
done

status=0
python3 - "$OUT/results.tsv" <<'PY' || status=$?
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
rps = {}; p99 = {}
for name, _, r, p in rows:
    rps.setdefault(name, []).append(float(r)); p99.setdefault(name, []).append(float(p))
median = {name: statistics.median(values) for name, values in rps.items()}
print("\n| configuration | median req/s | median p99 ms | rounds |\n|---|---|---|---|")
for name in rps:
    print(f"| {name} | {median[name]:.0f} | {statistics.median(p99[name]):.2f} | {', '.join(f'{v:.0f}' for v in rps[name])} |")
print()
failed = False
for test, base, target in (("r5000-miss", "r1-miss", 0.9), ("r5000-hit", "r1-hit", 0.9), ("a-when", "a", 0.97)):
    if test not in median or base not in median:
        continue
    ratio = median[test] / median[base]
    # Alternating rounds: each round's pair too, so one noisy round shows.
    pairs = [t / b for t, b in zip(rps[test], rps[base])]
    ok = ratio >= target
    failed |= not ok
    print(f"{test} / {base}: {ratio:.3f} (target >= {target}; per round {', '.join(f'{p:.3f}' for p in pairs)}) {'met' if ok else 'MISSED'}")
sys.exit(2 if failed else 0)
PY
((PROBLEMS == 0)) || exit 1
exit $status

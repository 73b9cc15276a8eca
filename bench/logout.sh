#!/usr/bin/env bash
# What back-channel logout costs a request (issue 59): A, a build from before it, against B, with
# `backchannel_logout = true` and a SQLite store holding 10 000 ended provider sessions, both answering the same token
# (bench/out/sid-token: it carries a sid that is among them, ended before the token was issued, so B looks it up in
# full and lets it through). The builds alternate for ROUNDS rounds, each a fresh process alone on CPU 1 (wrk and the
# nginx upstream on CPU 0), 50 connections, 2 s warm-up then DURATION s; medians and the paired median printed. Uses
# bench/profile.sh's configuration and bench/mint.py's tokens: run both once first.
#
#   ROUNDS=7 DURATION=6 bench/logout.sh /tmp/before .build-release/release/gatehouse
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=$(pwd)/bench/out/profile
OUT=$(pwd)/bench/out/logout
ROUNDS=${ROUNDS:-5}; DURATION=${DURATION:-6}
[ -f "$PROFILE/gatehouse.toml" ] && [ -f bench/out/sid-token ] || { echo "run bench/mint.py and bench/profile.sh once first" >&2; exit 1; }
cp bench/out/jwks.json "$PROFILE/www/jwks.json"  # the keys of the tokens minted last
mkdir -p "$OUT"; rm -f "$OUT"/*.db
TOKEN=$(cat bench/out/sid-token)
{ cat "$PROFILE/gatehouse.toml"; printf '[revocation]\nstore = "sqlite:%s/a.db"\n' "$OUT"; } > "$OUT/a.toml"
sed 's/^audiences = .*/&\nbackchannel_logout = true/' "$PROFILE/gatehouse.toml" > "$OUT/b.toml"
printf '[revocation]\nstore = "sqlite:%s/b.db"\n' "$OUT" >> "$OUT/b.toml"
"$1" check-config --config "$OUT/a.toml" >/dev/null
"$2" check-config --config "$OUT/b.toml" >/dev/null
taskset -c 0 nginx -c "$PROFILE/upstream.conf" -p "$PROFILE" & NGINX=$!
trap 'kill $NGINX 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:18181/" && break; sleep 0.1; done

serve() {  # $1 binary, $2 config: starts it on CPU 1, waits until ready; the pid in $pid
  taskset -c 1 "$1" serve --config "$2" 2>/dev/null & pid=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:18184/readyz >/dev/null && break; sleep 0.1; done
}
# B's store: let B make its schema, then end 10 000 sessions of provider "bench", the token's among them (ended an hour
# before the token was issued: it stays valid, after a full lookup).
serve "$2" "$OUT/b.toml"; kill "$pid"; wait "$pid" 2>/dev/null || true
python3 - "$OUT/b.db" "$TOKEN" <<'PY'
import base64, json, sqlite3, sys
payload = sys.argv[2].split(".")[1]
iat = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["iat"]
db = sqlite3.connect(sys.argv[1])
rows = [("bench", f"ended-{i}", iat - 3600) for i in range(9999)] + [("bench", "bench-session", iat - 3600)]
db.executemany("INSERT INTO gatehouse_revoked_provider_sessions (provider, sid, issued_before) VALUES (?, ?, ?)", rows)
db.commit()
print(f"B's store: {db.execute('SELECT COUNT(*) FROM gatehouse_revoked_provider_sessions').fetchone()[0]} ended sessions")
PY

source bench/ab.sh
A=(); B=()
for round in $(seq "$ROUNDS"); do
  order=(A B); (( round % 2 == 0 )) && order=(B A)   # neither build always runs first
  for side in "${order[@]}"; do
    if [[ $side == A ]]; then serve "$1" "$OUT/a.toml"; else serve "$2" "$OUT/b.toml"; fi
    measure "round $round $side" http://127.0.0.1:18183/x -H "Authorization: Bearer $TOKEN" || { kill "$pid"; exit 1; }
    kill "$pid"; wait "$pid" 2>/dev/null || true
    if [[ $side == A ]]; then A+=("$rps"); else B+=("$rps"); fi
  done
done
summarize "${A[*]}" "${B[*]}" A B 0.98
